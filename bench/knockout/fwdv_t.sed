# the forward values the element-wise phase loads replaced by distinct values of the thread's index and the step (no load, no prefetch of them, the recompute's math kept live, unlike fwdv.sed's constants)
/const float v[0-9].* = .*a\.\(buf\|params\|state_prev\)\[/s/\(const float v\([0-9]*\)[a-z_]* = \).*;/\10.25f + 0.001f * (float)(threadIdx.x + a.t) + 0.0001f * \2.0f;/
