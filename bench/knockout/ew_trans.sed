# the element-wise phase's recomputed transcendentals out (sigmoid and tanh as the identity), its products, loads and stores kept
/the forward's values, recomputed/,/backward through the values, last to first/ {
    s/rnn_op_sigmoid(\([^)]*\))/(\1)/
    s/rnn_op_tanh(\([^)]*\))/(\1)/
}
