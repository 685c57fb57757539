/* Arena allocator: bump allocation in large blocks, one free for everything.
 * Key idea: objects are never freed singly, so the compiler has no ownership rules. */
#include "arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ArenaBlock {
    ArenaBlock *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
};

enum { ARENA_BLOCK = 64 * 1024 };

void arena_init(Arena *a) { a->head = NULL; a->failed = 0; }

void arena_free(Arena *a) {
    ArenaBlock *b = a->head;
    while (b) {
        ArenaBlock *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

void *arena_alloc(Arena *a, size_t n) {
    const size_t align = alignof(max_align_t);
    if (n > SIZE_MAX / 2) { a->failed = 1; return NULL; }
    n = (n + align - 1) & ~(align - 1);
    ArenaBlock *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b) { a->failed = 1; return NULL; }
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

void *arena_array(Arena *a, size_t count, size_t size) {
    size_t n;
    if (__builtin_mul_overflow(count, size, &n)) { a->failed = 1; return NULL; }
    return arena_alloc(a, n ? n : 1);
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
    char *p = arena_alloc(a, n + 1);
    if (p) { memcpy(p, s, n); p[n] = 0; }
    return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_vprintf(Arena *a, const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) return NULL;
    char *p = arena_alloc(a, (size_t)n + 1);
    if (p) vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *p = arena_vprintf(a, fmt, ap);
    va_end(ap);
    return p;
}
