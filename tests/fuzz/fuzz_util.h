/* What the libFuzzer targets share: a check that aborts with its place, the test that text is
 * printable ASCII and newlines, and the input compiled by the front end into a fresh arena. */
#ifndef RNNCC_FUZZ_UTIL_H
#define RNNCC_FUZZ_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../ir/ir.h"

#define CHECK(cond)                                                                 \
    do {                                                                            \
        if (!(cond)) {                                                              \
            fprintf(stderr, "%s:%d: broken: %s\n", __FILE__, __LINE__, #cond);      \
            abort();                                                                \
        }                                                                           \
    } while (0)

/* Dumps and generated code hold printable ASCII and newlines only. */
static inline int text_ok(const StrBuf *sb) {
    for (size_t i = 0; i < sb->len; i++) {
        unsigned char c = (unsigned char)sb->data[i];
        if (c != '\n' && (c < ' ' || c > '~')) return 0;
    }
    return 1;
}

/* Initialises arena and diags for the input and compiles it: its module, or NULL (errors in diags). */
static inline const IrModule *fuzz_compile_input(Arena *arena, Diags *diags, const uint8_t *data, size_t size) {
    arena_init(arena);
    diag_init(diags, arena, "fuzz.cell", (const char *)data, size);
    return ir_compile(arena, diags, (const char *)data, size);
}
#endif
