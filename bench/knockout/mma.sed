# no product on tensor cores (16-bit products): rnn_mv_mma's k loop taken out (weights from registers or shared memory)
s/rnn_mma_k<KI, MT, RPP, KS, 2, WS>(fr, (const unsigned short \*)W + w0, ldw, kw, step);/;/
