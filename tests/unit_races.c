/* Static race checks of the persistent units' text (tests/unit_races.h). Key idea: cut a step
 * loop's text at its grid barriers, note where each scope reads, stores or stages which array and
 * over which length's shares (the block's elements [L s/G, L (s+1)/G) of a length L), and ask of every
 * pair that no barrier orders whether one block takes both elements. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_races.h"

/* Within a check that holds memory: the reason into why, the check failed, to its cleanup. */
#define FAIL(...)                                                                   \
    do {                                                                            \
        snprintf(why, why_size, __VA_ARGS__);                                       \
        ok = 0;                                                                     \
        goto done;                                                                  \
    } while (0)

/* The value of `#define RNN_DIM_<name> <value>` in unit u for the name starting at name (ended by a
 * character that cannot be in one); -1 where u has no such line. */
static long long unit_dim(const char *u, const char *name) {
    size_t n = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
    char key[80];
    if (n == 0 || n > 40) return -1;
    snprintf(key, sizeof key, "#define RNN_DIM_%.*s ", (int)n, name);
    const char *d = strstr(u, key);
    return d ? atoll(d + strlen(key)) : -1;
}

/* The length the scope opening at p runs over: that of the first rnn_j0_X or rnn_nj_X after p. */
static long long scope_length(const char *u, const char *p) {
    const char *j0 = strstr(p, "= rnn_j0_"), *nj = strstr(p, "nj = rnn_nj_");
    const char *at = j0 && (!nj || j0 < nj) ? j0 + strlen("= rnn_j0_") : nj ? nj + strlen("nj = rnn_nj_") : NULL;
    return at ? unit_dim(u, at) : -1;
}

/* The start of the line holding p, not before lo. */
static const char *line_start(const char *lo, const char *p) {
    while (p > lo && p[-1] != '\n') p--;
    return p;
}

/* Does needle occur between line and p (on p's line, before p)? */
static int before_on_line(const char *line, const char *p, const char *needle) {
    const char *at = strstr(line, needle);
    return at && at < p;
}

/* The ']' closing the index that opens at e ('['), on e's line; NULL where there is none. */
static const char *index_close(const char *e) {
    for (int d = 0; *e && *e != '\n'; e++) {
        d += *e == '[' ? 1 : *e == ']' ? -1 : 0;
        if (d == 0) return *e == ']' ? e : NULL;
    }
    return NULL;
}

/* How the element whose index opens at e is used: 1 stored (`] = `), 2 added to (`] += `), 0 read. */
static int element_store(const char *e) {
    const char *c = index_close(e);
    return !c ? 0 : strncmp(c + 1, " = ", 3) == 0 ? 1 : strncmp(c + 1, " += ", 4) == 0 ? 2 : 0;
}

/* One character of a scan through a step loop's text from its `for`: a comment is passed over (*p
 * moves to its line's end) and braces are counted in *depth; 0 at the loop's closing brace. */
static int in_loop(const char **p, int *depth) {
    if ((*p)[0] == '/' && (*p)[1] == '/') {
        const char *eol = strchr(*p, '\n');
        if (!eol) return 0;
        *p = eol;
        return 1;
    }
    if (**p == '{') (*depth)++;
    return !(**p == '}' && --*depth == 0);
}

/* Does p open a step group's scope (`// K<k> over this block's units` on its line)? */
int unit_group_header(const char *p) {
    const char *eol = strchr(p, '\n'), *at = strncmp(p, "// K", 4) == 0 ? strstr(p, " over this block's units") : NULL;
    return at && (!eol || at < eol);
}

/* A static check of a persistent forward unit u, independent of how the generator decides
 * (bench/NOTES.md section 75): every value loaded before a step's hand-off is complete (between
 * rnn_grid_arrive and rnn_grid_wait; with flags, before the step's first product), other than
 * a prefetch, is either a value no step writes (not a step buffer: hoisted results, parameters,
 * the input) or an element of a state that this block itself stored at the step before: the scope
 * loading it runs over the same length as the step group storing the state's next value, so that
 * both take a block's elements alike. With flags, where no barrier follows, that holds for every
 * state a group reads in the step. Returns 1 when it holds; else 0 with *why naming the load.
 * *states counts the state loads it checked. */
int early_loads_own(const char *u, int *states, char *why, size_t why_size) {
    const char *loop = strstr(u, "for (int t = args.t; t < args.t_end; t++) {");
    if (!loop) return snprintf(why, why_size, "no forward step loop"), 0;
    /* the length of the group storing each state's next value */
    long long writer[64];
    for (int k = 0; k < 64; k++) writer[k] = -1;
    for (const char *g = loop; (g = strstr(g, "// K")) != NULL; g++) {
        if (!unit_group_header(g)) continue;
        long long len = scope_length(u, g);
        const char *next = strstr(g + 4, "// K");
        for (const char *w = g; (w = strstr(w, "a.state_next[")) != NULL && (!next || w < next); w++) {
            int k = atoi(w + strlen("a.state_next["));
            if (k < 0 || k >= 64) continue;
            if (writer[k] >= 0 && writer[k] != len) return snprintf(why, why_size, "state %d stored over two lengths", k), 0;
            writer[k] = len;
        }
    }
    /* loads of step buffers are checked up to to, of states up to state_to: with flags no barrier
     * follows at all (unless a group reads other blocks' rows), so every state a group reads */
    const char *from = strstr(loop, "rnn_grid_arrive(args.sync);"), *to = NULL, *state_to = NULL;
    const char *wait = strstr(loop, "rnn_grid_wait(args.sync, ++epoch);");
    if (from && wait && wait < from) from = loop; /* the arrival ends the step before: the loop's top is after it */
    if (from) to = state_to = strstr(from, "rnn_grid_wait(args.sync, ++epoch);");
    else if (!strstr(loop, "rnn_mv")) return 1; /* no step product (IndRNN): no hand-off, nothing loaded early */
    else {
        from = loop, to = strstr(loop, "rnn_mv");
        state_to = strstr(loop, "rnn_grid_sync(");
        if (!state_to) state_to = strstr(loop, "RNN_PROF_END();");
    }
    if (!to || !state_to) return snprintf(why, why_size, "no hand-off's end after the step's start"), 0;
    long long len = -1;
    for (const char *p = from; p < (to > state_to ? to : state_to); p++) {
        if (strncmp(p, "// K", 4) == 0) len = scope_length(u, p);
        int state = strncmp(p, "a.state_prev[", 13) == 0, buf = strncmp(p, "a.buf[", 6) == 0;
        const char *idx_end = state || buf ? strchr(p, ']') : NULL;
        if (!idx_end || idx_end[1] != '[') continue; /* an element read, not the step's view of the array */
        const char *line = line_start(from, p);
        if (before_on_line(line, p, "rnn_prefetch(&")) continue;
        int k = atoi(p + (state ? 13 : 6));
        if (buf ? p >= to : p >= state_to) continue;
        if (buf) {
            char step[64];
            snprintf(step, sizeof step, "a.buf[%d] = args.buf[%d] + t * ", k, k);
            if (strstr(loop, step)) return snprintf(why, why_size, "step buffer %d loaded early: %.80s", k, line), 0;
            continue;
        }
        (*states)++;
        if (k < 0 || k >= 64 || writer[k] < 0 || writer[k] != len)
            return snprintf(why, why_size, "state %d (stored over %lld elements) loaded early over %lld: %.100s", k,
                            k >= 0 && k < 64 ? writer[k] : -1, len, line), 0;
    }
    return 1;
}

/* The rows of stacked block b of step GEMM g in unit u (its setup's `const int R[n] = {...}` after
 * `// G<g> = `), or -1. */
static long long gemm_block_rows(const char *u, int g, int b) {
    char head[32];
    snprintf(head, sizeof head, "// G%d = ", g);
    const char *h = strstr(u, head), *r = h ? strstr(h, "const int R[") : NULL;
    const char *brace = r ? strchr(r, '{') : NULL;
    if (!brace) return -1;
    const char *p = brace + 1;
    for (int k = 0; k < b; k++) {
        p = strchr(p, ',');
        if (!p || p > strchr(brace, '}')) return -1;
        p++;
    }
    return atoll(p);
}

/* A second static check of a persistent forward unit u (bench/NOTES.md section 75): a step group
 * reads a step GEMM's result only where it may. From the block's shared memory (rnn_res<g>, or a
 * fused product's partial sums, rnn_red_sum) only rows this block computed: the stacked block runs
 * over the group's length. From global memory, either rows this block computed or, where it did
 * not, after a grid barrier that followed the GEMM (the generator skips that barrier when a group
 * reads only its own rows: "K2 reads only the rows this block computed"). Returns 1 when it holds;
 * else 0 with *why. *reads counts the results read that it checked. */
int results_read_own_rows(const char *u, int *reads, char *why, size_t why_size) {
    const char *loop = strstr(u, "for (int t = args.t; t < args.t_end; t++) {");
    if (!loop) return snprintf(why, why_size, "no forward step loop"), 0;
    enum { GMAX = 64 };
    int synced[GMAX]; /* per step GEMM: a grid barrier since its product in this step (or not yet run) */
    for (int g = 0; g < GMAX; g++) synced[g] = 1;
    long long len = -1;
    for (const char *p = loop; *p; p++) {
        if (strncmp(p, "rnn_grid_sync(", 14) == 0 || strncmp(p, "rnn_grid_wait(", 14) == 0)
            for (int g = 0; g < GMAX; g++) synced[g] = 1;
        int g = -1, b = -1;
        if (sscanf(p, "// G%d: [", &g) == 1 && g >= 0 && g < GMAX) synced[g] = 0; /* the product's call follows */
        if (unit_group_header(p)) len = scope_length(u, p);
        if (strncmp(p, ": G", 3) != 0 || sscanf(p, ": G%d block %d", &g, &b) != 2) continue;
        const char *eol = strchr(p, '\n');
        if (eol && before_on_line(p, eol, ", hoisted")) continue; /* before the loop */
        const char *line = line_start(loop, p);
        if (strncmp(line + strspn(line, " "), "const float ", 12) != 0) continue; /* a read's comment only */
        long long rows = gemm_block_rows(u, g, b);
        if (rows < 0 || g >= GMAX) return snprintf(why, why_size, "G%d block %d: no rows in the unit's setup", g, b), 0;
        (*reads)++;
        /* kept rows (rnn_res<g>) and a fused product's partial sums (rnn_red_sum) are the block's own */
        int shared = before_on_line(line, p, "= rnn_res") || before_on_line(line, p, "rnn_red_sum(");
        if (rows != len && (shared || !synced[g]))
            return snprintf(why, why_size, "G%d block %d (%lld rows) read over %lld %s: %.100s", g, b, rows, len,
                            shared ? "from shared memory" : "with no barrier since its product", line), 0;
    }
    return 1;
}

/* A static check of a persistent backward unit u: the values it fetches ahead into registers
 * (q<K>_..., qy<K>_...: a step ahead, while other blocks may still be at the step before) are the
 * forward's (its buffers, states, parameters, the input) or the outputs' adjoints dy, never an
 * adjoint the backward computes; and the unit stores no element of the forward's buffers or
 * states, so nothing it fetches can change under it. Returns 1 when it holds; else 0 with *why.
 * *fetches counts the fetches it checked. */
int backward_fetches_forward_values(const char *u, int *fetches, char *why, size_t why_size) {
    const char *k = strstr(u, "extern \"C\" __global__");
    if (!k || !strstr(k, "for (int t = args.t_end - 1; t >= args.t; t--) {"))
        return snprintf(why, why_size, "no backward step loop"), 0;
    for (const char *p = k; *p; p++) {
        int buf = strncmp(p, "a.buf[", 6) == 0, state = strncmp(p, "a.state_prev[", 13) == 0 || strncmp(p, "a.state_next[", 13) == 0;
        if (buf || state) { /* an element stored: `...][index] = ` */
            const char *close = strchr(p, ']');
            if (close && close[1] == '[' && element_store(close + 1) == 1)
                return snprintf(why, why_size, "a forward value stored in the backward: %.100s", line_start(k, p)), 0;
        }
        if (!(p[0] == 'q' && (p == u || p[-1] == ' ')) || !(isdigit((unsigned char)p[1]) || (p[1] == 'y' && isdigit((unsigned char)p[2]))))
            continue;
        const char *name_end = p + strcspn(p, " =;,)"); /* `q<K>_... = value`: a fetch, but for its zero */
        if (strncmp(name_end, " = ", 3) != 0 || strncmp(name_end, " = 0.0f", 7) == 0) continue;
        const char *v = name_end + 3;
        (*fetches)++;
        if ((strncmp(v, "a.d", 3) == 0 && strncmp(v, "a.dy[", 5) != 0) || strncmp(v, "args.d", 6) == 0)
            return snprintf(why, why_size, "an adjoint fetched ahead: %.100s", line_start(k, p)), 0;
    }
    return 1;
}

/* Argument i of the call whose argument list opens at p (just past its '('), into out; 0 where
 * it has none. */
static int call_arg(const char *p, int i, char *out, size_t size) {
    for (int a = 0, depth = 0; *p && *p != '\n'; p++) {
        if (a == i) {
            size_t n = strcspn(p, ",)");
            if (n >= size) return 0;
            memcpy(out, p, n);
            out[n] = 0;
            return 1;
        }
        depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        if (depth < 0) return 0;
        if (*p == ',' && depth == 0) a++, p += p[1] == ' ';
    }
    return 0;
}

/* A step product's call at p (`rnn_mv...(w<g>, ...)`), forward or transposed: its GEMM g, and its
 * arguments operand (7: what it stages whole) and output (14) into x and o. 1 for such a call, 0 where
 * p is none, -1 where its arguments are not as expected. */
static int product_call(const char *p, int *g, char x[64], char o[64]) {
    if (strncmp(p, "rnn_mv", 6) != 0 || sscanf(p + strcspn(p, "("), "(w%d,", g) != 1) return 0;
    const char *args_at = p + strcspn(p, "(") + 1;
    return call_arg(args_at, 7, x, 64) && call_arg(args_at, 14, o, 64) ? 1 : -1;
}

/* One staging of a step product's operand, or one store, in a persistent forward step
 * (forward_staged_values_stay). */
typedef struct FwdAccess {
    int seg;      /* the stretch between the step's grid barriers (0: before the first completes) */
    int buf, k;   /* state k (0) or step buffer k (1), with its 16-bit twin */
    int slot;     /* a state's: 0 the step's (t), 1 the next (t + 1) */
    int staged;   /* 1: a product stages it whole; 0: a store of this block's elements */
    const char *at;
} FwdAccess;

/* The array a forward unit's text names at p: a state's (a.state_prev, its twin rnn_x16_: slot t;
 * a.state_next, its twin a.state16: t + 1) or a step buffer's (a.buf, its twin rnn_b16_), with *buf,
 * *k, *slot, and where its name ends (*end); NULL where p names none of them. */
static const char *forward_array(const char *p, int *buf, int *k, int *slot) {
    static const struct { const char *fmt; int buf, slot; } names[] = {
        {"a.state_prev[%d]%n", 0, 0}, {"rnn_x16_%d%n", 0, 0}, {"a.state_next[%d]%n", 0, 1}, {"a.state16[%d]%n", 0, 1},
        {"a.buf[%d]%n", 1, 0},        {"rnn_b16_%d%n", 1, 0}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        int n = 0;
        if (strncmp(p, names[i].fmt, strcspn(names[i].fmt, "%")) == 0 && sscanf(p, names[i].fmt, k, &n) == 1 && n) {
            *buf = names[i].buf, *slot = names[i].slot;
            return p + n;
        }
    }
    return NULL;
}

/* A static check of a persistent forward unit u with grid barriers (not flags), the other side of
 * early_loads_own and results_read_own_rows: what a step product stages (every element of a state or
 * a stored value, or their 16-bit twins) is not stored by any block while it may be staged. No store
 * to the same array and slot between the same two barriers, nor across the loop's turn (step t's last
 * stretch against step t+1's first) where the slots meet: inference keeps two state slots (t and
 * t + 2 are one) and a step buffer may be one for every step (buf_step 0), so the check takes them so.
 * Returns 1 when it holds (flags units: nothing checked); else 0 with *why. *staged counts the
 * stagings it checked. */
int forward_staged_values_stay(const char *u, int *staged, char *why, size_t why_size) {
    const char *loop = strstr(u, "for (int t = args.t; t < args.t_end; t++) {");
    if (!loop) return snprintf(why, why_size, "no forward step loop"), 0;
    if (strstr(loop, "// no barrier: step t-1's states arrive as flagged words")) return 1;
    /* every access takes at least a dozen characters of the loop's text */
    const size_t cap = strlen(loop) / 12 + 16;
    FwdAccess *acc = malloc(cap * sizeof *acc);
    if (!acc) return snprintf(why, why_size, "out of memory"), 0;
    int n = 0, seg = 0, depth = 0, ok = 1;
    for (const char *p = loop; *p && in_loop(&p, &depth); p++) {
        if (strncmp(p, "rnn_grid_sync(", 14) == 0 || strncmp(p, "rnn_grid_wait(", 14) == 0) seg++;
        int buf, k, slot, gq = -1;
        char x[64], o[64];
        int call = product_call(p, &gq, x, o);
        if (call < 0) FAIL("G%d: an unexpected call: %.90s", gq, line_start(loop, p));
        if (call) {
            if (!forward_array(x, &buf, &k, &slot))
                FAIL("G%d stages %s, which the check does not know", gq, x);
            acc[n++] = (FwdAccess){seg, buf, k, slot, 1, line_start(loop, p)};
            if (forward_array(o, &buf, &k, &slot)) acc[n++] = (FwdAccess){seg, buf, k, slot, 0, line_start(loop, p)};
            const char *eol = strchr(p, '\n');
            if (eol) p = eol - 1;
            continue;
        }
        /* a store: `X[k][index] = ...`, or a twin's `rnn_put16(&X[k][index], ...)` */
        int put = strncmp(p, "rnn_put16(&", 11) == 0;
        const char *e = forward_array(put ? p + 11 : p, &buf, &k, &slot);
        if (!e || *e != '[') continue; /* not an element: the array itself (the step's view) */
        if (!put && element_store(e) != 1) continue;
        acc[n++] = (FwdAccess){seg, buf, k, slot, 0, line_start(loop, p)};
        if (put && index_close(e)) p = index_close(e);
    }
    int last = seg;
    for (int a = 0; a < n; a++) {
        const FwdAccess *x = &acc[a];
        if (!x->staged) continue;
        (*staged)++;
        for (int b = 0; b < n; b++) {
            const FwdAccess *y = &acc[b];
            if (y->staged || y->buf != x->buf || y->k != x->k) continue;
            int same = x->seg == y->seg && (x->buf || x->slot == y->slot);
            /* staged at step t's end, stored at step t+1's start, or the other way round */
            int turn = (x->seg == last && y->seg == 0 && (x->buf || x->slot == (y->slot + 1) % 2)) ||
                       (y->seg == last && x->seg == 0 && (x->buf || y->slot == (x->slot + 1) % 2));
            if (same || turn)
                FAIL("%s %d staged %s a store to it: %.80s", x->buf ? "buffer" : "state", x->k,
                     same ? "between the same barriers as" : "across the loop's turn from", x->at);
        }
    }
done:
    free(acc);
    return ok;
}

/* One access to an adjoint in a backward step (backward_adjoints_read_own). */
typedef struct AdjAccess {
    int seg;        /* the stretch between the step's grid barriers it is in (0: before the first) */
    int buf;        /* 0: state k's adjoint; 1: buffer k's (a.dbuf[k] or its 16-bit twin a.dbuf16[k]) */
    int k, off;     /* the state or buffer, and a state's slot: (t + off) % 3 */
    int write, read;
    int staged;     /* a transposed product's operand: it reads every element */
    long long len;  /* the length whose shares the accessing scope (or a product's rows) takes */
    const char *at;
} AdjAccess;

/* The slot offset of the access to state k's adjoint at p (`a.dstate_prev[k][`: 0, `a.dstate_next[k][`: 1,
 * `args.dstate_prev[k][((t + D) % 3)`: D), with *k; -1 where p is none (or not an element's). */
static int adjoint_slot(const char *p, int *k) {
    int d = -1, n = 0;
    if (sscanf(p, "a.dstate_prev[%d][%n", k, &n) == 1 && n) return 0;
    if (sscanf(p, "a.dstate_next[%d][%n", k, &n) == 1 && n) return 1;
    if (sscanf(p, "args.dstate_prev[%d][((t + %d) %% 3)%n", k, &d, &n) == 2 && n) return d % 3;
    return -1;
}

/* A static check of a persistent backward unit u, for the race class of bench/NOTES.md section 75
 * in the backward's adjoints: where no grid barrier orders a store of a state adjoint's element
 * before another scope's access to it (in one stretch of a step between barriers, or across the loop's
 * turn from step t+1's last barrier to step t's first), both scopes run over the same length (a
 * group's items, or a transposed product's rows, the operand elements a block owns), so that one
 * block takes both elements. The generator skips the step's opening barrier where no state crosses
 * blocks (cg_persist_states_cross_blocks). The same within a stretch for the adjoints of step
 * buffers (a step's own, in training: not across the turn), and a transposed product stages no
 * buffer that its stretch stores to. Returns 1 when it holds; else 0 with *why. *reads counts the
 * accesses it checked. */
int backward_adjoints_read_own(const char *u, int *reads, char *why, size_t why_size) {
    const char *loop = strstr(u, "for (int t = args.t_end - 1; t >= args.t; t--) {");
    if (!loop) return snprintf(why, why_size, "no backward step loop"), 0;
    /* every access takes at least a dozen characters of the loop's text */
    const size_t cap = strlen(loop) / 12 + 16;
    AdjAccess *acc = malloc(cap * sizeof *acc);
    if (!acc) return snprintf(why, why_size, "out of memory"), 0;
    int n = 0, seg = 0, depth = 0, ok = 1;
    long long len = -1;
    for (const char *p = loop; *p && in_loop(&p, &depth); p++) {
        if (strncmp(p, "= rnn_nj_", 9) == 0) len = unit_dim(u, p + 9);
        /* a barrier's wait ends a stretch (the backward's prefetch, loads alone, lies between its halves) */
        if (strncmp(p, "rnn_grid_sync(", 14) == 0 || strncmp(p, "rnn_grid_wait(", 14) == 0) seg++;
        int k = -1, off = adjoint_slot(p, &k), gq = -1, buf = 0, nb = 0;
        long long alen = len;
        const char *at = line_start(loop, p);
        int write = 0, read = 1, call = 0;
        char x[64], o[64];
        if (off < 0 && (sscanf(p, "a.dbuf[%d][%n", &k, &nb) == 1 || sscanf(p, "a.dbuf16[%d][%n", &k, &nb) == 1) && nb)
            buf = 1, off = 0;
        if (off >= 0) { /* an element: stored where `] = ` or `] += ` closes its index */
            int store = element_store(strchr(p, ']') + 1);
            write = store != 0, read = store != 1;
        } else if ((call = product_call(p, &gq, x, o)) != 0) {
            /* a transposed product: it stages its operand (a result's adjoint) whole, and adds into the
             * adjoint of its operand's elements this block owns (a state's, or a stored value's) */
            const char *eol = strchr(p, '\n');
            char def[48];
            if (call < 0) FAIL("G%d^T: an unexpected call: %.90s", gq, at);
            snprintf(def, sizeof def, "const int lo%d = (int)(", gq);
            const char *d = strstr(u, def);
            if (!d) FAIL("G%d^T: no rows in the unit's setup", gq);
            int kx = -1, ko = -1;
            if (sscanf(x, "a.dbuf%*[16][%d]", &kx) == 1 || sscanf(x, "a.dbuf[%d]", &kx) == 1)
                acc[n++] = (AdjAccess){seg, 1, kx, 0, 0, 1, 1, -2, at};
            if (sscanf(o, "a.dstate_prev[%d]", &ko) == 1) acc[n++] = (AdjAccess){seg, 0, ko, 0, 1, 1, 0, atoll(d + strlen(def)), at};
            else if (sscanf(o, "a.dbuf[%d]", &ko) == 1) acc[n++] = (AdjAccess){seg, 1, ko, 0, 1, 1, 0, atoll(d + strlen(def)), at};
            else FAIL("G%d^T adds into %s, neither a state's nor a buffer's adjoint", gq, o);
            p = eol ? eol - 1 : p;
            continue;
        } else continue;
        if (k < 0 || k >= 64 || alen < 0)
            FAIL("%s %d's adjoint: no scope length: %.90s", buf ? "buffer" : "state", k, at);
        acc[n++] = (AdjAccess){seg, buf, k, off, write, read, 0, alen, at};
    }
    int last = seg; /* the stretch after the step's last barrier (0 too where it has none) */
    for (int a = 0; a < n; a++) {
        (*reads) += acc[a].read;
        for (int b = 0; b < n; b++) {
            const AdjAccess *x = &acc[a], *y = &acc[b]; /* y stores; x accesses it, unordered */
            if (a == b || !y->write || x->buf != y->buf || x->k != y->k || (x->len == y->len && !x->staged)) continue;
            int same = x->seg == y->seg && x->off == y->off; /* one step */
            /* step t+1's last stretch, then step t's first: a store there and an access here, or the other way round */
            int turn = !x->buf && ((x->seg == 0 && y->seg == last && x->off == (y->off + 1) % 3) ||
                                   (y->seg == 0 && x->seg == last && y->off == (x->off + 1) % 3));
            if (x->staged && same)
                FAIL("buffer %d's adjoint staged whole where it is stored between the same barriers: %.90s", x->k, x->at);
            if (same || turn)
                FAIL("%s %d's adjoint stored over %lld and accessed over %lld %s: %.90s", x->buf ? "buffer" : "state", x->k,
                     y->len, x->len, same ? "between two barriers" : "across the loop's turn", x->at);
        }
    }
done:
    free(acc);
    return ok;
}
