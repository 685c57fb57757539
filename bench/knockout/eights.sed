# bench/knockout/eights.sed: a persistent unit planned in clusters of 4 made one of clusters of 8 (its
# cluster code is generic in RNN_CLUSTER); launch it with RNNCC_KNOCKOUT_LAUNCH[_FORWARD]=120,256,8.
# bench/NOTES.md section 66.
s/^#define RNN_CLUSTER 4.*/#define RNN_CLUSTER 8/
