/* libFuzzer target for the compiler's back half: every cell of any bytes that compiles is
 * scheduled, laid out, and emitted as CUDA text (the per-step units, forward and backward, and
 * persistent kernels for a few asks), without NVRTC; a fresh arena each time, everything freed.
 * Key idea: the dimensions and the asks come from a hash of the input, so that mutations reach
 * odd sizes, both directions, every product kind, flags, clusters, warps and chunks; it aborts on
 * broken promises (a refusal without a reason, emission after a plan that fit failing, text
 * that is not printable ASCII, a persistent unit that fails tests/unit_races.h's race checks). A cell
 * that the projection fold takes (ir/fold_projection.h) goes through all of it folded too.
 * tests/fuzz/fuzz_parse.c covers parse and check. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../codegen/cg.h"
#include "../../ir/fold_projection.h"
#include "../../ir/ir.h"
#include "../../ir/sched.h"
#include "../unit_races.h"
#include "fuzz_util.h"

/* FNV-1a of the input: the source of every choice below. */
static uint64_t hash_of(const uint8_t *data, size_t size) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 1099511628211ULL;
    return h;
}

/* Takes the next choice of n from the hash. */
static unsigned pick(uint64_t *h, unsigned n) {
    unsigned v = (unsigned)(*h % n);
    *h = *h / n ^ (*h << 29);
    return v;
}

/* A failure must carry a diagnostic (the state it left in diags). */
static void refused_with_reason(const Diags *d, int errors_before) { CHECK(d->nerrors > errors_before); }

/* The persistent unit u holds tests/unit_races.h's static checks (no block reads or overwrites
 * another's element between two grid barriers); else the reason, and abort. */
static void races_absent(const char *u, int backward) {
    char why[256] = "";
    int n = 0, ok = backward ? backward_fetches_forward_values(u, &n, why, sizeof why) && backward_adjoints_read_own(u, &n, why, sizeof why)
                              : early_loads_own(u, &n, why, sizeof why) && results_read_own_rows(u, &n, why, sizeof why) &&
                                    forward_staged_values_stay(u, &n, why, sizeof why);
    if (!ok) fprintf(stderr, "persistent %s unit: %s\n", backward ? "backward" : "forward", why);
    CHECK(ok);
}

static void compile_cell(Arena *arena, Diags *diags, const IrCell *c, uint64_t h) {
    static const int64_t sizes[] = {1, 3, 7, 8, 16, 33, 72, 96, 300, 1024};
    int errors = diags->nerrors;
    Plan *plan = sched_plan(arena, c, diags);
    if (!plan) {
        refused_with_reason(diags, errors);
        return;
    }
    StrBuf sb = {0};
    sched_dump(plan, NULL, &sb);
    CHECK(!sb.failed && text_ok(&sb));
    sb_free(&sb);
    int64_t *dimval = arena_array(arena, (size_t)c->ndims + 1, sizeof *dimval);
    CHECK(dimval);
    for (int d = 0; d < c->ndims; d++)
        dimval[d] = c->dims[d].name ? sizes[pick(&h, sizeof sizes / sizeof *sizes)] : c->dims[d].literal;
    PlanLayout *L = sched_layout(arena, plan, dimval, diags);
    if (!L) {
        refused_with_reason(diags, errors);
        return;
    }
    sched_dump(plan, L, &sb);
    CHECK(!sb.failed && text_ok(&sb));
    sb_free(&sb);
    if (!cg_emit_forward(arena, plan, L, &sb, diags)) refused_with_reason(diags, errors);
    else CHECK(!sb.failed && text_ok(&sb) && sb.len > 0);
    sb_free(&sb);
    for (int backward = 0; backward < 2; backward++) {
        static const int64_t batches[] = {1, 4, 7, 16, 33, 64};
        CgPersistAsk ask = cg_persist_h100_ask(batches[pick(&h, 6)], backward, (CgProducts)pick(&h, 4), 1 + (int)pick(&h, 2));
        static const int warps[] = {0, 4, 8, 16};
        ask.warps = warps[pick(&h, 4)];
        ask.kc_cap = pick(&h, 3) == 0 ? 256 : 0;
        ask.handoff = pick(&h, 2) ? CG_HANDOFF_FLAGS : CG_HANDOFF_BARRIER;
        ask.twins = ask.products == CG_F16 || ask.products == CG_BF16;
        if (pick(&h, 4) == 0) ask.nw_max = 2;
        CgPersist P;
        char why[256] = "";
        if (!cg_persist_plan(arena, L, &ask, &P, why, sizeof why)) {
            CHECK(why[0]); /* a refusal says why */
            continue;
        }
        CHECK(P.blocks >= 1 && P.blocks <= ask.sms && P.blocks % P.cluster == 0 && P.smem <= ask.smem_limit);
        char tile[160];
        cg_persist_tile_text(&P, tile, sizeof tile);
        CHECK(tile[0]);
        errors = diags->nerrors;
        if (!cg_emit_persistent(arena, plan, L, &P, &sb, diags)) refused_with_reason(diags, errors);
        else {
            CHECK(!sb.failed && text_ok(&sb) && sb.len > 0);
            races_absent(sb_str(&sb), backward);
        }
        sb_free(&sb);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Arena arena;
    Diags diags;
    const IrModule *m = fuzz_compile_input(&arena, &diags, data, size);
    for (int i = 0; m && i < m->ncells; i++) {
        compile_cell(&arena, &diags, m->cells[i], hash_of(data, size) + (uint64_t)i);
        IrFold f;
        const IrCell *folded = ir_fold_projection(&arena, m->cells[i], &f);
        CHECK(folded || (f.why_not && f.why_not[0])); /* a cell that does not fold says why */
        if (folded) compile_cell(&arena, &diags, folded, hash_of(data, size) + (uint64_t)i);
    }
    StrBuf sb = {0};
    diag_render(&diags, &sb);
    CHECK(!sb.failed);
    sb_free(&sb);
    arena_free(&arena);
    return 0;
}
