# the forward values the element-wise phase loads made constants (0.5)
/const float v[0-9].* = .*a\.\(buf\|params\|state_prev\)\[/s/= .*;/= 0.5f;/
