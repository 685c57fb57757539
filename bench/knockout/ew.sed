# the element-wise phase runs over no item
/K1's backward over/,/i += blockDim.x/ s/i < (long long)a\.N \* nj;/i < 0;/
