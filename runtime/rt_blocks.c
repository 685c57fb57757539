/* Weight blocks a pass derives into a region of their own (RNNCC_TF32X3's splits, rt_x3.c; fp32 step GEMMs'
 * transposed copies, rt_wt.c): each block once a pass, in floats of its own, 128-byte aligned for cuBLAS. */
#include <stdlib.h>

#include "rt_internal.h"

enum { BLOCK_ALIGN = 32 }; /* floats */

int64_t rt_blocks_len(const rnncc_model *m, int copies, int (*keep)(SchedProgram)) {
    int64_t len = 0;
    for (int u = 0; u < m->nunits; u++)
        for (int j = 0; j < m->plan->ngemms; j++)
            if (!keep || keep(m->plan->gemms[j].program))
                len += copies * m->units[u].layout->gemm_rows[j] * m->units[u].layout->gemm_cols[j] + BLOCK_ALIGN;
    return len;
}

int64_t rt_blocks_at(RtBlocks *s, int64_t off, int64_t rows, int64_t cols, int op, int copies, int64_t len, int *fresh,
                     RtBlock **block) {
    *fresh = 0;
    for (int i = 0; i < s->n; i++)
        if (s->block[i].off == off && s->block[i].rows == rows && s->block[i].cols == cols && s->block[i].op == op) {
            if (block) *block = &s->block[i];
            return s->block[i].at;
        }
    const int64_t at = (s->used + BLOCK_ALIGN - 1) / BLOCK_ALIGN * BLOCK_ALIGN;
    if (copies * rows * cols > len - at) return -1;
    if (s->n == s->room) {
        int room = s->room ? 2 * s->room : 16;
        RtBlock *p = realloc(s->block, (size_t)room * sizeof *p);
        if (!p) return -2;
        s->block = p;
        s->room = room;
    }
    if (block) *block = &s->block[s->n];
    s->block[s->n++] = (RtBlock){off, rows, cols, at, op, 0};
    s->used = at + copies * rows * cols;
    *fresh = 1;
    return at;
}
