/* From syntax tree to checked IR: resolves names, orders statements by their data
 * dependencies, infers shapes, folds constants and hash-conses nodes into a DAG.
 * Key idea: values are built on demand by a depth-first walk from their uses, so source
 * order does not matter, a cycle is a value met again while it is being built, and every
 * node's operands exist before it (topological ids for free). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../grammar/ast.h"
#include "ir.h"

enum { MAX_NAME_LEN = 64, MAX_DEPTH = 2000 };

typedef enum { SYM_INPUT, SYM_STATE, SYM_PARAM, SYM_VALUE } SymKind;
typedef enum { BUILD_TODO, BUILD_ACTIVE, BUILD_DONE, BUILD_FAILED } BuildState;

typedef struct Sym {
    const char *name;
    SymKind kind;
    int index;             /* input, state or parameter index */
    SrcLoc loc;            /* the declaration or assignment */
    const AstStmt *stmt;   /* SYM_VALUE: its assignment */
    BuildState build;
    IrRef ref;
    int output;            /* listed as an output (finds duplicates without a quadratic search) */
    int read;              /* SYM_VALUE: named by an expression (a constant folded into another is used) */
} Sym;

/* The primed value of a state is built like a value; one entry per state. */
typedef struct Next {
    const AstStmt *stmt;
    BuildState build;
    IrRef ref;
} Next;

typedef struct Builder {
    Arena *arena;
    Diags *diags;
    IrCell *cell;
    int dims_cap, nodes_cap;
    /* dimension interning: open addressing over dimension index + 1 (0 = empty) */
    int *dimtab;
    uint32_t dimtab_cap;
    /* names: open addressing over Sym pointers */
    Sym **syms;
    uint32_t syms_cap, nsyms;
    /* hash-consing: open addressing over node ids */
    IrRef *cons;
    uint32_t cons_cap;
    Next *next;            /* [nstates] */
    const char *stack[MAX_DEPTH]; /* values being built, outermost first, for cycle messages */
    int nstack;
    int depth;             /* expression nesting */
    int too_deep;          /* a depth limit was reported (once per cell) */
} Builder;

/* ---- names ---------------------------------------------------------------- */

static uint32_t hash_str(const char *s) {
    uint32_t h = 2166136261u;
    while (*s) h = (h ^ (unsigned char)*s++) * 16777619u;
    return h;
}

static Sym *sym_find(Builder *b, const char *name) {
    if (!b->syms_cap) return NULL;
    for (uint32_t i = hash_str(name) & (b->syms_cap - 1);; i = (i + 1) & (b->syms_cap - 1)) {
        Sym *s = b->syms[i];
        if (!s) return NULL;
        if (strcmp(s->name, name) == 0) return s;
    }
}

static Sym *sym_add(Builder *b, const char *name, SymKind kind, int index, SrcLoc loc) {
    if ((b->nsyms + 1) * 2 > b->syms_cap) {
        uint32_t cap = b->syms_cap ? b->syms_cap * 2 : 64;
        Sym **t = arena_array(b->arena, cap, sizeof *t);
        if (!t) return NULL;
        for (uint32_t i = 0; i < b->syms_cap; i++) {
            Sym *s = b->syms[i];
            if (!s) continue;
            uint32_t j = hash_str(s->name) & (cap - 1);
            while (t[j]) j = (j + 1) & (cap - 1);
            t[j] = s;
        }
        b->syms = t;
        b->syms_cap = cap;
    }
    Sym *s = arena_alloc(b->arena, sizeof *s);
    if (!s) return NULL;
    *s = (Sym){.name = name, .kind = kind, .index = index, .loc = loc, .ref = IR_NONE};
    uint32_t j = hash_str(name) & (b->syms_cap - 1);
    while (b->syms[j]) j = (j + 1) & (b->syms_cap - 1);
    b->syms[j] = s;
    b->nsyms++;
    return s;
}

/* Every C23 and C++20 keyword and alternative token, and CUDA's half (names that begin
 * with '_' are refused anyway). */
static const char *const reserved_words[] = {
    "auto", "bool", "break", "case", "char", "class", "const", "constexpr", "continue",
    "default", "delete", "do", "double", "else", "enum", "extern", "false", "float", "for",
    "goto", "if", "inline", "int", "long", "namespace", "new", "operator", "private",
    "protected", "public", "register", "restrict", "return", "short", "signed", "sizeof",
    "static", "struct", "switch", "template", "this", "true", "typedef", "typename",
    "union", "unsigned", "using", "virtual", "void", "volatile", "while", "half", "nullptr",
    "alignas", "alignof", "asm", "catch", "char8_t", "char16_t", "char32_t", "concept",
    "consteval", "constinit", "const_cast", "co_await", "co_return", "co_yield", "decltype",
    "dynamic_cast", "explicit", "export", "friend", "mutable", "noexcept", "reinterpret_cast",
    "requires", "static_assert", "static_cast", "thread_local", "throw", "try", "typeid",
    "typeof", "typeof_unqual", "wchar_t", "and", "and_eq", "bitand", "bitor", "compl", "not",
    "not_eq", "or", "or_eq", "xor", "xor_eq",
};

static const char *kind_word(SymKind k) {
    return k == SYM_INPUT ? "input" : k == SYM_STATE ? "state" : k == SYM_PARAM ? "parameter" : "value";
}

/* Names reach generated code only mangled (v<id>_<name>), but the rules below keep even
 * the mangled form a plain, unreserved C identifier. */
static int check_name(Builder *b, const char *name, SrcLoc loc) {
    if (strlen(name) > MAX_NAME_LEN) {
        diag_error(b->diags, loc, "name '%.20s...' is longer than %d characters", name, MAX_NAME_LEN);
        return 0;
    }
    if (strstr(name, "__") || name[0] == '_') {
        diag_error(b->diags, loc, "name '%s' is reserved: names may not begin with '_' or contain '__'", name);
        return 0;
    }
    for (size_t i = 0; i < sizeof reserved_words / sizeof *reserved_words; i++)
        if (strcmp(name, reserved_words[i]) == 0) {
            diag_error(b->diags, loc, "'%s' is a reserved word and cannot name a value", name);
            return 0;
        }
    return 1;
}

/* ---- dimensions and shapes ------------------------------------------------- */

static uint32_t dim_hash(const IrDim *d) {
    return d->name ? hash_str(d->name) : (uint32_t)((uint64_t)d->literal * 0x9E3779B97F4A7C15ull >> 32);
}

static int dim_same(const IrDim *a, const IrDim *b) {
    return a->name ? b->name && strcmp(a->name, b->name) == 0 : !b->name && a->literal == b->literal;
}

/* Returns the slot of dimension d in the interning table: its entry, or the empty slot for it. */
static uint32_t dim_slot(const Builder *b, const IrDim *d) {
    uint32_t mask = b->dimtab_cap - 1, j = dim_hash(d) & mask;
    while (b->dimtab[j] && !dim_same(&b->cell->dims[b->dimtab[j] - 1], d)) j = (j + 1) & mask;
    return j;
}

static int dim_intern(Builder *b, const char *name, int64_t literal) {
    IrCell *c = b->cell;
    IrDim key = {name, literal};
    if ((uint32_t)(c->ndims + 1) * 2 > b->dimtab_cap) {
        uint32_t cap = b->dimtab_cap ? b->dimtab_cap * 2 : 16;
        int *t = arena_array(b->arena, cap, sizeof *t);
        if (!t) return -1;
        b->dimtab = t;
        b->dimtab_cap = cap;
        for (int i = 0; i < c->ndims; i++) t[dim_slot(b, &c->dims[i])] = i + 1;
    }
    uint32_t j = dim_slot(b, &key);
    if (b->dimtab[j]) return b->dimtab[j] - 1;
    if (c->ndims == b->dims_cap) {
        int cap = b->dims_cap ? b->dims_cap * 2 : 8;
        IrDim *d = arena_array(b->arena, (size_t)cap, sizeof *d);
        if (!d) return -1;
        if (c->ndims) memcpy(d, c->dims, (size_t)c->ndims * sizeof *d);
        c->dims = d;
        b->dims_cap = cap;
    }
    c->dims[c->ndims] = key;
    b->dimtab[j] = c->ndims + 1;
    return c->ndims++;
}

/* Resolves one written dimension; returns its index or -1 after an error. */
static int dim_of(Builder *b, const AstDim *d) {
    if (d->name) {
        if (!check_name(b, d->name, d->loc)) return -1;
        return dim_intern(b, d->name, 0);
    }
    const char *t = d->text;
    int64_t v = 0;
    int ok = *t != 0;
    for (; *t && ok; t++) {
        if (*t < '0' || *t > '9') ok = 0;
        else if ((v = v * 10 + (*t - '0')) > INT32_MAX) ok = 0;
    }
    if (!ok || v <= 0) {
        diag_error(b->diags, d->loc, "a dimension must be a positive integer below 2^31 or a name, not '%s'", d->text);
        return -1;
    }
    return dim_intern(b, NULL, v);
}

/* Formats a shape as [H], [H, I] or 'a scalar' for messages. */
static const char *shape_text(Builder *b, IrShape s) {
    char d0[32], d1[32];
    switch (s.kind) {
    case IR_SCALAR: return "a scalar";
    case IR_VECTOR: return arena_printf(b->arena, "[%s]", ir_dim_text(b->cell, s.dims[0], d0, sizeof d0));
    default:
        return arena_printf(b->arena, "[%s, %s]", ir_dim_text(b->cell, s.dims[0], d0, sizeof d0),
                            ir_dim_text(b->cell, s.dims[1], d1, sizeof d1));
    }
}

static IrShape decl_shape(Builder *b, const AstDecl *d, int max_dims, const char *what, int *ok) {
    IrShape s = {IR_VECTOR, {0, 0}};
    *ok = 0;
    if (d->ndims < 1 || d->ndims > max_dims) {
        diag_error(b->diags, d->loc, "%s '%s' has %d dimensions; it must have %s", what, d->name,
                   d->ndims, max_dims == 1 ? "exactly 1" : "1 (a vector) or 2 (a matrix)");
        return s;
    }
    for (int i = 0; i < d->ndims; i++)
        if ((s.dims[i] = dim_of(b, &d->dims[i])) < 0) return s;
    if (d->ndims == 2) s.kind = IR_MATRIX;
    *ok = 1;
    return s;
}

/* ---- nodes ------------------------------------------------------------------ */

static uint32_t node_hash(const IrNode *n) {
    uint64_t bits;
    memcpy(&bits, &n->value, sizeof bits);
    uint64_t h = (uint64_t)n->op * 0x9E3779B97F4A7C15ull;
    h ^= n->args[0] + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= n->args[1] + 0x85157AF5ull + (h << 6) + (h >> 2);
    h ^= n->args[2] + (h << 6) + (h >> 2);
    h ^= bits + (h << 6) + (h >> 2);
    h ^= (uint64_t)(uint32_t)n->index + (h << 6) + (h >> 2);
    return (uint32_t)(h ^ (h >> 32));
}

static int node_same(const IrNode *a, const IrNode *b) {
    return a->op == b->op && a->args[0] == b->args[0] && a->args[1] == b->args[1] &&
           a->args[2] == b->args[2] && a->index == b->index &&
           memcmp(&a->value, &b->value, sizeof a->value) == 0;
}

static int cons_grow(Builder *b) {
    uint32_t cap = b->cons_cap ? b->cons_cap * 2 : 256;
    IrRef *t = arena_array(b->arena, cap, sizeof *t);
    if (!t) return 0;
    memset(t, 0xff, cap * sizeof *t);
    for (uint32_t i = 0; i < b->cell->nnodes; i++) {
        uint32_t j = node_hash(&b->cell->nodes[i]) & (cap - 1);
        while (t[j] != IR_NONE) j = (j + 1) & (cap - 1);
        t[j] = i;
    }
    b->cons = t;
    b->cons_cap = cap;
    return 1;
}

/* Returns the node equal to n if one exists (hash-consing), else appends n. */
static IrRef node_add(Builder *b, IrNode n) {
    IrCell *c = b->cell;
    for (int i = ir_ops[n.op].arity; i < 3; i++) n.args[i] = IR_NONE;
    if ((c->nnodes + 1) * 2 > b->cons_cap && !cons_grow(b)) return IR_NONE;
    uint32_t j = node_hash(&n) & (b->cons_cap - 1);
    for (; b->cons[j] != IR_NONE; j = (j + 1) & (b->cons_cap - 1))
        if (n.op != IR_INPUT && n.op != IR_STATE && n.op != IR_PARAM && node_same(&c->nodes[b->cons[j]], &n))
            return b->cons[j];
    if ((int)c->nnodes == b->nodes_cap) {
        int cap = b->nodes_cap ? b->nodes_cap * 2 : 64;
        IrNode *p = arena_array(b->arena, (size_t)cap, sizeof *p);
        if (!p) return IR_NONE;
        if (c->nnodes) memcpy(p, c->nodes, c->nnodes * sizeof *p);
        c->nodes = p;
        b->nodes_cap = cap;
    }
    c->nodes[c->nnodes] = n;
    b->cons[j] = c->nnodes;
    return c->nnodes++;
}

static IrRef node_const(Builder *b, double v, SrcLoc loc) {
    return node_add(b, (IrNode){.op = IR_CONST, .shape = {IR_SCALAR, {0, 0}}, .value = v, .loc = loc});
}

/* ---- expressions -------------------------------------------------------------- */

static IrRef build_expr(Builder *b, const AstExpr *e);

static const char *node_label(Builder *b, IrRef r) {
    const IrNode *n = &b->cell->nodes[r];
    if (n->op == IR_PARAM) return arena_printf(b->arena, "'%s'", b->cell->params[n->index].name);
    if (n->op == IR_INPUT) return arena_printf(b->arena, "'%s'", b->cell->inputs[n->index].name);
    if (n->op == IR_STATE) return arena_printf(b->arena, "'%s'", b->cell->states[n->index].name);
    if (n->name) return arena_printf(b->arena, "'%s'", n->name);
    return "the operand";
}

static const char *op_text(IrOp op) {
    switch (op) {
    case IR_ADD: return "'+'";
    case IR_SUB: return "'-'";
    case IR_MUL: return "'*'";
    case IR_DIV: return "'/'";
    case IR_NEG: return "unary '-'";
    default: return NULL;
    }
}

/* Applies an element-wise op: shapes must agree (scalars broadcast); constants fold. */
static IrRef elementwise(Builder *b, IrOp op, const IrRef *args, int nargs, SrcLoc loc) {
    IrCell *c = b->cell;
    IrShape shape = {IR_SCALAR, {0, 0}};
    int all_const = 1;
    const char *what = op_text(op);
    if (!what) what = arena_printf(b->arena, "'%s'", ir_ops[op].name);
    for (int i = 0; i < nargs; i++) {
        const IrNode *a = &c->nodes[args[i]];
        if (a->shape.kind == IR_MATRIX) {
            diag_error(b->diags, loc, "matrix %s used in %s; a matrix can only be the left operand of '@'",
                       node_label(b, args[i]), what);
            return IR_NONE;
        }
        if (a->op != IR_CONST) all_const = 0;
        if (a->shape.kind == IR_VECTOR) {
            if (shape.kind == IR_VECTOR && shape.dims[0] != a->shape.dims[0]) {
                diag_error(b->diags, loc, "dimension mismatch: operands of %s are %s and %s", what,
                           shape_text(b, shape), shape_text(b, a->shape));
                return IR_NONE;
            }
            shape = a->shape;
        }
    }
    if (all_const) {
        double v[3] = {0, 0, 0};
        for (int i = 0; i < nargs; i++) v[i] = c->nodes[args[i]].value;
        double r = ir_op_eval(op, v[0], v[1], v[2]);
        if (!isfinite(r)) {
            diag_error(b->diags, loc, "constant expression evaluates to %s", isnan(r) ? "NaN" : "infinity");
            return IR_NONE;
        }
        return node_const(b, r, loc);
    }
    IrNode n = {.op = op, .shape = shape, .loc = loc};
    for (int i = 0; i < nargs; i++) n.args[i] = args[i];
    return node_add(b, n);
}

static IrRef build_matvec(Builder *b, const AstExpr *e) {
    IrRef m = build_expr(b, e->lhs);
    IrRef v = build_expr(b, e->rhs);
    if (m == IR_NONE || v == IR_NONE) return IR_NONE;
    IrCell *c = b->cell;
    const IrNode *mn = &c->nodes[m], *vn = &c->nodes[v];
    if (mn->op != IR_PARAM || mn->shape.kind != IR_MATRIX) {
        diag_error(b->diags, e->loc, "the left operand of '@' must be a matrix parameter, not %s",
                   mn->op == IR_PARAM ? arena_printf(b->arena, "vector parameter %s", node_label(b, m))
                   : mn->op == IR_CONST ? "a number" : arena_printf(b->arena, "%s", node_label(b, m)));
        return IR_NONE;
    }
    if (vn->shape.kind != IR_VECTOR) {
        diag_error(b->diags, e->loc, "the right operand of '@' must be a vector, not %s",
                   vn->shape.kind == IR_SCALAR ? "a scalar" : "a matrix");
        return IR_NONE;
    }
    if (vn->shape.dims[0] != mn->shape.dims[1]) {
        diag_error(b->diags, e->loc, "dimension mismatch: %s is %s but %s is %s", node_label(b, m),
                   shape_text(b, mn->shape), node_label(b, v), shape_text(b, vn->shape));
        return IR_NONE;
    }
    return node_add(b, (IrNode){.op = IR_MATVEC, .args = {m, v}, .shape = {IR_VECTOR, {mn->shape.dims[0], 0}},
                                .loc = e->loc});
}

static IrRef build_stmt_value(Builder *b, const AstStmt *s, BuildState *st, IrRef *ref, SrcLoc use);

static IrRef build_name(Builder *b, const AstExpr *e) {
    Sym *s = sym_find(b, e->name);
    if (!s) {
        diag_error(b->diags, e->loc, "unknown name '%s'", e->name);
        return IR_NONE;
    }
    if (s->kind != SYM_VALUE) return s->ref;
    s->read = 1;
    return build_stmt_value(b, s->stmt, &s->build, &s->ref, e->loc);
}

static IrRef build_primed(Builder *b, const AstExpr *e) {
    Sym *s = sym_find(b, e->name);
    if (!s || s->kind != SYM_STATE) {
        diag_error(b->diags, e->loc, "'%s'' is not a state%s", e->name,
                   s ? arena_printf(b->arena, " ('%s' is %s %s)", e->name,
                                    s->kind == SYM_INPUT ? "an" : "a", kind_word(s->kind))
                     : "");
        return IR_NONE;
    }
    Next *n = &b->next[s->index];
    if (!n->stmt) return IR_NONE; /* reported once, as a state without a next value */
    return build_stmt_value(b, n->stmt, &n->build, &n->ref, e->loc);
}

static IrRef build_call(Builder *b, const AstExpr *e) {
    int op = ir_op_find_function(e->name);
    if (op < 0) {
        diag_error(b->diags, e->loc, "unknown function '%s'", e->name);
        return IR_NONE;
    }
    if (e->nargs != ir_ops[op].arity) {
        diag_error(b->diags, e->loc, "'%s' takes %d argument%s, but %d %s given", e->name, ir_ops[op].arity,
                   ir_ops[op].arity == 1 ? "" : "s", e->nargs, e->nargs == 1 ? "was" : "were");
        return IR_NONE;
    }
    IrRef args[3];
    int ok = 1;
    for (int i = 0; i < e->nargs; i++)
        if ((args[i] = build_expr(b, e->args[i])) == IR_NONE) ok = 0;
    return ok ? elementwise(b, (IrOp)op, args, e->nargs, e->loc) : IR_NONE;
}

static IrRef build_expr(Builder *b, const AstExpr *e) {
    if (!e) return IR_NONE; /* allocation failed while parsing; already reported */
    if (b->depth >= MAX_DEPTH) {
        if (!b->too_deep) diag_error(b->diags, e->loc, "expressions nested more than %d deep", MAX_DEPTH);
        b->too_deep = 1;
        return IR_NONE;
    }
    b->depth++;
    IrRef r = IR_NONE;
    switch (e->kind) {
    case AST_NUM: r = node_const(b, e->num, e->loc); break;
    case AST_NAME: r = build_name(b, e); break;
    case AST_PRIMED: r = build_primed(b, e); break;
    case AST_CALL: r = build_call(b, e); break;
    case AST_NEG: {
        IrRef a = build_expr(b, e->lhs);
        if (a != IR_NONE) r = elementwise(b, IR_NEG, &a, 1, e->loc);
        break;
    }
    case AST_BINARY: {
        if (e->op == '@') { r = build_matvec(b, e); break; }
        IrRef args[2] = {build_expr(b, e->lhs), build_expr(b, e->rhs)};
        if (args[0] == IR_NONE || args[1] == IR_NONE) break;
        IrOp op = e->op == '+' ? IR_ADD : e->op == '-' ? IR_SUB : e->op == '*' ? IR_MUL : IR_DIV;
        r = elementwise(b, op, args, 2, e->loc);
        break;
    }
    }
    b->depth--;
    return r;
}

/* Builds an assignment's value once; meeting it again while it is being built is a cycle. */
static IrRef build_stmt_value(Builder *b, const AstStmt *s, BuildState *st, IrRef *ref, SrcLoc use) {
    if (*st == BUILD_DONE) return *ref;
    if (*st == BUILD_FAILED) return IR_NONE;
    const char *label = s->primed ? arena_printf(b->arena, "%s'", s->name) : s->name;
    if (*st == BUILD_ACTIVE) {
        StrBuf chain = {0};
        int from = b->nstack;
        while (from > 0 && strcmp(b->stack[from - 1], label) != 0) from--;
        for (int i = from > 0 ? from - 1 : 0; i < b->nstack; i++) sb_printf(&chain, "%s -> ", b->stack[i]);
        sb_puts(&chain, label);
        diag_error(b->diags, use, "'%s' depends on itself: %s", label, sb_str(&chain));
        sb_free(&chain);
        *st = BUILD_FAILED;
        return IR_NONE;
    }
    if (b->nstack >= MAX_DEPTH) {
        if (!b->too_deep) diag_error(b->diags, use, "values depend on each other more than %d deep", MAX_DEPTH);
        b->too_deep = 1;
        *st = BUILD_FAILED;
        return IR_NONE;
    }
    *st = BUILD_ACTIVE;
    b->stack[b->nstack++] = label;
    IrRef r = build_expr(b, s->expr);
    b->nstack--;
    if (*st == BUILD_FAILED) return IR_NONE; /* a cycle through this value was reported */
    if (r != IR_NONE) {
        IrNode *n = &b->cell->nodes[r];
        if (!n->name && n->op != IR_INPUT && n->op != IR_STATE && n->op != IR_PARAM)
            n->name = label;
    }
    *st = r == IR_NONE ? BUILD_FAILED : BUILD_DONE;
    *ref = r;
    return r;
}

/* ---- declarations and statements ---------------------------------------------- */

static int count_decls(const AstDecl *d) {
    int n = 0;
    for (; d; d = d->next) n++;
    return n;
}

/* Declares one input, state or parameter: checks its name and shape, makes its leaf. */
static void declare(Builder *b, const AstDecl *d, SymKind kind, IrVar *var, IrState *state, int index) {
    int ok;
    const char *what = kind_word(kind);
    IrShape shape = decl_shape(b, d, kind == SYM_PARAM ? 2 : 1, what, &ok);
    if (!check_name(b, d->name, d->loc)) ok = 0;
    Sym *prev = sym_find(b, d->name);
    if (prev) {
        diag_error(b->diags, d->loc, "'%s' is declared twice", d->name);
        diag_note(b->diags, prev->loc, "'%s' was first declared here as %s %s", d->name,
                  prev->kind == SYM_INPUT ? "an" : "a", kind_word(prev->kind));
        ok = 0;
    }
    IrOp op = kind == SYM_INPUT ? IR_INPUT : kind == SYM_STATE ? IR_STATE : IR_PARAM;
    /* A rejected declaration's shape may hold an unresolved dimension (-1): never keep it. */
    if (!ok) shape = (IrShape){IR_SCALAR, {0, 0}};
    IrRef ref = node_add(b, (IrNode){.op = op, .shape = shape, .index = index, .loc = d->loc});
    if (var) *var = (IrVar){d->name, shape, ref, d->loc};
    if (state) *state = (IrState){d->name, shape, ref, IR_NONE, d->loc};
    if (!prev) {
        Sym *s = sym_add(b, d->name, kind, index, d->loc);
        if (s) { s->ref = ok ? ref : IR_NONE; s->build = ok ? BUILD_DONE : BUILD_FAILED; }
    }
}

static void declare_all(Builder *b, const AstCell *ac) {
    IrCell *c = b->cell;
    c->ninputs = count_decls(ac->inputs);
    c->nstates = count_decls(ac->states);
    c->nparams = count_decls(ac->params);
    c->inputs = arena_array(b->arena, (size_t)c->ninputs + 1, sizeof *c->inputs);
    c->states = arena_array(b->arena, (size_t)c->nstates + 1, sizeof *c->states);
    c->params = arena_array(b->arena, (size_t)c->nparams + 1, sizeof *c->params);
    b->next = arena_array(b->arena, (size_t)c->nstates + 1, sizeof *b->next);
    if (!c->inputs || !c->states || !c->params || !b->next) return;
    if (c->ninputs != 1)
        diag_error(b->diags, ac->inputs && ac->inputs->next ? ac->inputs->next->loc : ac->loc,
                   "a cell takes exactly one input vector, not %d", c->ninputs);
    int i = 0;
    for (const AstDecl *d = ac->inputs; d; d = d->next, i++) declare(b, d, SYM_INPUT, &c->inputs[i], NULL, i);
    i = 0;
    for (const AstDecl *d = ac->states; d; d = d->next, i++) {
        if (i == IR_MAX_STATES)
            diag_error(b->diags, d->loc, "a cell has at most %d states; '%s' is the %dth", IR_MAX_STATES, d->name, i + 1);
        declare(b, d, SYM_STATE, NULL, &c->states[i], i);
    }
    i = 0;
    for (const AstDecl *d = ac->params; d; d = d->next, i++) declare(b, d, SYM_PARAM, &c->params[i], NULL, i);
}

/* Records every assignment's name: values become symbols, primed names attach to states. */
static void collect_statements(Builder *b, const AstCell *ac) {
    for (const AstStmt *s = ac->stmts; s; s = s->next) {
        Sym *prev = sym_find(b, s->name);
        if (s->primed) {
            if (!prev || prev->kind != SYM_STATE) {
                diag_error(b->diags, s->loc, "'%s'' is not a state; only states take a primed next value%s",
                           s->name, prev ? arena_printf(b->arena, " ('%s' is %s %s)", s->name,
                                                        prev->kind == SYM_INPUT ? "an" : "a", kind_word(prev->kind))
                                         : "");
                continue;
            }
            Next *n = &b->next[prev->index];
            if (n->stmt) {
                diag_error(b->diags, s->loc, "'%s'' is assigned twice", s->name);
                diag_note(b->diags, n->stmt->loc, "first assigned here");
                continue;
            }
            n->stmt = s;
            continue;
        }
        if (!check_name(b, s->name, s->loc)) continue;
        if (prev && prev->kind == SYM_VALUE) {
            diag_error(b->diags, s->loc, "'%s' is assigned twice", s->name);
            diag_note(b->diags, prev->loc, "first assigned here");
        } else if (prev && prev->kind == SYM_STATE) {
            diag_error(b->diags, s->loc, "cannot assign to state '%s'; write %s' = ... for its next value",
                       s->name, s->name);
        } else if (prev) {
            diag_error(b->diags, s->loc, "cannot assign to %s '%s'", kind_word(prev->kind), s->name);
        } else {
            Sym *v = sym_add(b, s->name, SYM_VALUE, -1, s->loc);
            if (v) v->stmt = s;
        }
    }
}

/* Builds every assignment in source order (so node ids follow the source), then checks
 * that each state got a next value of its own shape. Unused values are checked too. */
static void build_states_and_values(Builder *b, const AstCell *ac) {
    IrCell *c = b->cell;
    for (const AstStmt *s = ac->stmts; s; s = s->next) {
        Sym *v = sym_find(b, s->name);
        if (!v) continue;
        if (s->primed && v->kind == SYM_STATE && b->next[v->index].stmt == s)
            build_stmt_value(b, s, &b->next[v->index].build, &b->next[v->index].ref, s->loc);
        else if (!s->primed && v->kind == SYM_VALUE && v->stmt == s)
            build_stmt_value(b, s, &v->build, &v->ref, s->loc);
    }
    for (int k = 0; k < c->nstates; k++) {
        Next *n = &b->next[k];
        if (!n->stmt) {
            diag_error(b->diags, c->states[k].loc, "state '%s' is never given a next value (%s' = ...)",
                       c->states[k].name, c->states[k].name);
            continue;
        }
        IrRef r = n->build == BUILD_DONE ? n->ref : IR_NONE;
        if (r == IR_NONE) continue;
        const IrNode *v = &c->nodes[r];
        if (c->states[k].shape.kind == IR_VECTOR &&
            (v->shape.kind != IR_VECTOR || v->shape.dims[0] != c->states[k].shape.dims[0])) {
            diag_error(b->diags, n->stmt->loc, "dimension mismatch: %s' is %s but state '%s' is %s",
                       c->states[k].name, shape_text(b, v->shape), c->states[k].name,
                       shape_text(b, c->states[k].shape));
            continue;
        }
        c->states[k].next = r;
    }
}

static void build_outputs(Builder *b, const AstCell *ac) {
    IrCell *c = b->cell;
    int n = 0;
    for (const AstOutput *o = ac->outputs; o; o = o->next) n++;
    c->outputs = arena_array(b->arena, (size_t)n + 1, sizeof *c->outputs);
    if (!c->outputs) return;
    int i = 0;
    for (const AstOutput *o = ac->outputs; o; o = o->next, i++) {
        if (i == IR_MAX_OUTPUTS)
            diag_error(b->diags, o->loc, "a cell has at most %d outputs; '%s' is the %dth", IR_MAX_OUTPUTS, o->name, i + 1);
        Sym *s = sym_find(b, o->name);
        IrRef r = IR_NONE;
        if (!s) {
            diag_error(b->diags, o->loc, "unknown output '%s'; an output names a state or a computed value", o->name);
            continue;
        }
        if (s->output) {
            diag_error(b->diags, o->loc, "output '%s' is listed twice", o->name);
            continue;
        }
        if (s->kind == SYM_STATE) r = c->states[s->index].next;
        else if (s->kind == SYM_VALUE) r = s->ref;
        else {
            diag_error(b->diags, o->loc, "output '%s' is %s %s; an output names a state or a computed value",
                       o->name, s->kind == SYM_INPUT ? "an" : "a", kind_word(s->kind));
            continue;
        }
        if (r == IR_NONE) continue; /* its own error was reported */
        if (c->nodes[r].shape.kind != IR_VECTOR) {
            diag_error(b->diags, o->loc, "output '%s' is %s; an output must be a vector", o->name,
                       shape_text(b, c->nodes[r].shape));
            continue;
        }
        c->outputs[c->noutputs++] = (IrOutput){o->name, r, o->loc};
        s->output = 1;
    }
}

/* Keeps the declared leaves and what the states and outputs need; renumbers in order. */
static void prune(Builder *b, const AstCell *ac) {
    IrCell *c = b->cell;
    char *live = arena_alloc(b->arena, c->nnodes + 1);
    IrRef *map = arena_array(b->arena, c->nnodes + 1, sizeof *map);
    if (!live || !map) return;
    for (int k = 0; k < c->nstates; k++) if (c->states[k].next != IR_NONE) live[c->states[k].next] = 1;
    for (int k = 0; k < c->noutputs; k++) live[c->outputs[k].node] = 1;
    for (uint32_t i = c->nnodes; i-- > 0;) {
        if (!live[i]) continue;
        for (int a = 0; a < ir_ops[c->nodes[i].op].arity; a++) live[c->nodes[i].args[a]] = 2;
    }
    /* Warnings: declared leaves and named values that nothing reached. */
    for (int k = 0; k < c->ninputs; k++)
        if (!live[c->inputs[k].node]) diag_warning(b->diags, c->inputs[k].loc, "input '%s' is never used", c->inputs[k].name);
    for (int k = 0; k < c->nparams; k++)
        if (!live[c->params[k].node]) diag_warning(b->diags, c->params[k].loc, "parameter '%s' is never used", c->params[k].name);
    for (const AstStmt *s = ac->stmts; s; s = s->next) {
        Sym *v = s->primed ? NULL : sym_find(b, s->name);
        /* a constant read by an expression that folded it (k in k * 3) leaves no edge in the graph, but is used;
         * one read only by values nothing uses is not reported apart: they are */
        if (v && v->kind == SYM_VALUE && v->stmt == s && v->ref != IR_NONE && !live[v->ref] &&
            !(v->read && c->nodes[v->ref].op == IR_CONST))
            diag_warning(b->diags, s->loc, "value '%s' is never used", s->name);
    }
    for (uint32_t i = 0; i < c->nnodes; i++) {
        IrOp op = c->nodes[i].op;
        if (op == IR_INPUT || op == IR_STATE || op == IR_PARAM) live[i] = 1;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < c->nnodes; i++) {
        if (!live[i]) { map[i] = IR_NONE; continue; }
        IrNode node = c->nodes[i];
        for (int a = 0; a < ir_ops[node.op].arity; a++) node.args[a] = map[node.args[a]];
        map[i] = n;
        c->nodes[n++] = node;
    }
    c->nnodes = n;
    for (int k = 0; k < c->ninputs; k++) c->inputs[k].node = map[c->inputs[k].node];
    for (int k = 0; k < c->nparams; k++) c->params[k].node = map[c->params[k].node];
    for (int k = 0; k < c->nstates; k++) {
        c->states[k].node = map[c->states[k].node];
        if (c->states[k].next != IR_NONE) c->states[k].next = map[c->states[k].next];
    }
    for (int k = 0; k < c->noutputs; k++) c->outputs[k].node = map[c->outputs[k].node];
}

static IrCell *build_cell(Arena *arena, Diags *diags, const AstCell *ac) {
    Builder b = {.arena = arena, .diags = diags};
    b.cell = arena_alloc(arena, sizeof *b.cell);
    if (!b.cell) return NULL;
    b.cell->name = ac->name;
    b.cell->loc = ac->loc;
    int errors = diags->nerrors;
    /* A cell's name is part of its kernels' names (rnncc_<cell>_s1): a trailing '_' would make a
     * '__', which C++ reserves. */
    if (check_name(&b, ac->name, ac->loc) && ac->name[0] && ac->name[strlen(ac->name) - 1] == '_')
        diag_error(diags, ac->loc, "cell name '%s' may not end with '_'", ac->name);
    declare_all(&b, ac);
    if (arena->failed) return NULL;
    collect_statements(&b, ac);
    build_states_and_values(&b, ac);
    build_outputs(&b, ac);
    if (ac->outputs == NULL) diag_error(diags, ac->loc, "cell '%s' has no outputs", ac->name);
    if (diags->nerrors == errors && !arena->failed) prune(&b, ac);
    return arena->failed ? NULL : b.cell;
}

IrModule *ir_compile(Arena *arena, Diags *diags, const char *src, size_t len) {
    int errors = diags->nerrors;
    AstCell *cells = ast_parse(arena, diags, src, len);
    IrModule *m = arena_alloc(arena, sizeof *m);
    if (!m) return NULL;
    m->filename = diags->filename;
    int n = 0;
    for (AstCell *c = cells; c; c = c->next) n++;
    m->cells = arena_array(arena, (size_t)n + 1, sizeof *m->cells);
    if (!m->cells) return NULL;
    /* The cells built so far by name (open addressing), to find a second definition. */
    uint32_t cap = 16;
    while (cap < 2 * (uint32_t)n + 2) cap *= 2;
    IrCell **seen = arena_array(arena, cap, sizeof *seen);
    if (!seen) return NULL;
    for (AstCell *c = cells; c; c = c->next) {
        if (c->broken) continue;
        uint32_t j = hash_str(c->name) & (cap - 1);
        while (seen[j] && strcmp(seen[j]->name, c->name) != 0) j = (j + 1) & (cap - 1);
        if (seen[j]) {
            diag_error(diags, c->loc, "cell '%s' is defined twice", c->name);
            diag_note(diags, seen[j]->loc, "first defined here");
        }
        IrCell *ic = build_cell(arena, diags, c);
        if (ic) m->cells[m->ncells++] = ic;
        if (ic && !seen[j]) seen[j] = ic;
    }
    if (!cells && diags->nerrors == errors) diag_error(diags, (SrcLoc){0, 0, 1}, "no cell definitions in input");
    if (arena->failed && diags->nerrors == errors) diag_error(diags, (SrcLoc){0, 0, 1}, "out of memory");
    return diags->nerrors > errors ? NULL : m;
}
