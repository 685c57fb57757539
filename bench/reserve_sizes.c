/* Memory a training pass keeps for the backward: rnncc's reserve per shipped cell beside
 * cuDNN's for LSTM and GRU (cudnnGetRNNTempSpaceSizes, training mode), at the benchmark
 * configurations, one layer, fp32. Prints a markdown table (docs/training.md records it).
 * Usage (on a GPU machine, repository root): build/bench/reserve_sizes */
#include <cudnn.h>
#include <stdio.h>
#include <stdlib.h>

#include "runtime/rnncc.h"

typedef struct { const char *name; int T, N, H; } Cfg;
static const Cfg cfgs[] = {{"ds2", 300, 20, 800}, {"fastrnns", 100, 64, 512}, {"small_b4", 100, 4, 1024},
                           {"large", 100, 256, 1024}, {"deepbench", 25, 32, 1024}, {"flashrnn", 1024, 16, 768}};
/* Each shipped cell and its one extra dimension beyond I and H, if any ('M' = H, 'P' = H/2). */
static const struct { const char *name; char extra; } cells[] = {
    {"lstm", 0}, {"gru", 0}, {"peephole", 0}, {"cifg", 0}, {"lstmp", 'P'}, {"mlstm", 'M'}, {"mgu", 0}, {"indrnn", 0}, {"sru", 0}};

/* cuDNN's training reserve in bytes for an LSTM (gru = 0) or GRU of one layer; -1 on failure. */
static double cudnn_reserve(cudnnHandle_t h, int gru, const Cfg *c) {
    cudnnRNNDescriptor_t rnn;
    cudnnRNNDataDescriptor_t x;
    size_t ws = 0, rs = 0;
    int *lens = malloc(sizeof(int) * (size_t)c->N);
    for (int n = 0; n < c->N; n++) lens[n] = c->T;
    int ok = cudnnCreateRNNDescriptor(&rnn) == CUDNN_STATUS_SUCCESS &&
             cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, gru ? CUDNN_GRU : CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                                      CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT,
                                      CUDNN_FMA_MATH, c->H, c->H, c->H, 1, NULL, CUDNN_RNN_PADDED_IO_ENABLED) ==
                 CUDNN_STATUS_SUCCESS &&
             cudnnCreateRNNDataDescriptor(&x) == CUDNN_STATUS_SUCCESS &&
             cudnnSetRNNDataDescriptor(x, CUDNN_DATA_FLOAT, CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, c->T, c->N, c->H, lens,
                                       NULL) == CUDNN_STATUS_SUCCESS &&
             cudnnGetRNNTempSpaceSizes(h, rnn, CUDNN_FWD_MODE_TRAINING, x, &ws, &rs) == CUDNN_STATUS_SUCCESS;
    free(lens);
    return ok ? (double)rs : -1;
}

/* rnncc's training reserve in bytes for a shipped cell; every dimension H (I = H, M = H, P = H/2). */
static double rnncc_reserve(const char *cell, char extra, const Cfg *c) {
    char path[64], dI[32], dH[32], dX[32];
    snprintf(path, sizeof path, "cells/%s.cell", cell);
    snprintf(dI, sizeof dI, "I=%d", c->H);
    snprintf(dH, sizeof dH, "H=%d", c->H);
    snprintf(dX, sizeof dX, "%c=%d", extra, extra == 'P' ? c->H / 2 : c->H);
    const char *dims[3] = {dI, dH, dX};
    int nd = extra ? 3 : 2;
    rnncc_program *p = NULL;
    rnncc_model *m = NULL;
    size_t rs = 0;
    double out = -1;
    if (rnncc_compile_file(path, NULL, &p) == RNNCC_OK) {
        rnncc_model_desc d = {NULL, dims, nd, 1, 0, RNNCC_FP32, -1, RNNCC_BACKEND_AUTO, RNNCC_FOLD_AUTO, 0};
        if (rnncc_model_create(p, &d, &m) == RNNCC_OK && rnncc_reserve_size(m, c->T, c->N, &rs) == RNNCC_OK) out = (double)rs;
        else fprintf(stderr, "reserve_sizes: %s: %s\n", cell, rnncc_model_error(m));
    }
    rnncc_model_destroy(m);
    rnncc_program_destroy(p);
    return out;
}

int main(void) {
    cudnnHandle_t h;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "reserve_sizes: no CUDA device (cudnnCreate failed)\n");
        return 77;
    }
    printf("| config (T, N, H) | cuDNN LSTM | cuDNN GRU |");
    for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) printf(" %s |", cells[i].name);
    printf("\n|---|---|---|");
    for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) printf("---|");
    printf("\n");
    for (size_t k = 0; k < sizeof cfgs / sizeof *cfgs; k++) {
        const Cfg *c = &cfgs[k];
        double ls = cudnn_reserve(h, 0, c), gs = cudnn_reserve(h, 1, c);
        printf("| %s (%d, %d, %d) | %.0f MiB | %.0f MiB |", c->name, c->T, c->N, c->H, ls / 1048576, gs / 1048576);
        for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) {
            double r = rnncc_reserve(cells[i].name, cells[i].extra, c);
            double base = i == 0 ? ls : i == 1 ? gs : -1;
            if (base > 0) printf(" %.0f MiB (%.1fx) |", r / 1048576, r / base);
            else printf(" %.0f MiB |", r / 1048576);
        }
        printf("\n");
    }
    cudnnDestroy(h);
    return 0;
}
