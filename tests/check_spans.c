/* Tests for overlapping device buffers (runtime/rt_spans.c), host only, on addresses never read:
 * a written buffer overlapping another is refused by both names, read-only ones may overlap, twins
 * (a state's h0 and hT) may lie exactly on each other but not partly, empty ones are not judged.
 * check_runtime's buffers_must_lie_apart runs the same through the library's calls on a GPU. */
#include <check.h>
#include <string.h>

#include "../runtime/rt_spans.h"
#include "testutil.h"

static char mem[4096];

static const char *refusal(const RtSpans *s) {
    static char why[512];
    why[0] = 0;
    return rt_spans_disjoint(s, why, sizeof why) ? NULL : why;
}

START_TEST(written_buffers_lie_apart) {
    RtSpans s = {.n = 0};
    rt_span(&s, "io->x", -1, mem, 400, 0, 0);
    rt_span(&s, "io->dy", 0, mem + 100, 400, 0, 0); /* both read: may overlap */
    rt_span(&s, "workspace", -1, mem + 1000, 200, 1, 0);
    rt_span(&s, "io->y", 0, mem + 1200, 100, 1, 0); /* right after the workspace: apart */
    ck_assert_ptr_null(refusal(&s));
    rt_span(&s, "io->y", 1, mem + 1250, 100, 1, 0);
    const char *why = refusal(&s);
    ck_assert_ptr_nonnull(why);
    ck_assert_msg(strstr(why, "io->y[1] overlaps io->y[0] (100 and 100 bytes from "), "%s", why);
    ck_assert_msg(strstr(why, "the call writes io->y[0], so they must lie apart"), "%s", why);
    s.n--;
    rt_span(&s, "io->dx", -1, mem + 399, 8, 1, 0); /* one byte into x */
    why = refusal(&s);
    ck_assert_msg(why && strstr(why, "io->dx overlaps io->x (8 and 400 bytes"), "%s", why ? why : "(none)");
    ck_assert_msg(strstr(why, "the call writes io->dx"), "%s", why);
}
END_TEST

START_TEST(twins_lie_exactly_or_apart) {
    RtSpans s = {.n = 0};
    rt_span(&s, "io->h0", 0, mem, 256, 0, 1);
    rt_span(&s, "io->hT", 0, mem, 256, 1, 1); /* the same buffer: carried state */
    ck_assert_ptr_null(refusal(&s));
    rt_span(&s, "io->h0", 1, mem + 512, 256, 0, 2);
    rt_span(&s, "io->hT", 1, mem + 640, 256, 1, 2); /* partly: refused */
    const char *why = refusal(&s);
    ck_assert_msg(why && strstr(why, "io->hT[1] overlaps io->h0[1]"), "%s", why ? why : "(none)");
    s.n = 2;
    rt_span(&s, "io->hT", 1, mem, 256, 1, 2); /* another state's twin on state 0's: refused */
    why = refusal(&s);
    ck_assert_msg(why && strstr(why, "io->hT[1] overlaps io->h0[0]"), "%s", why ? why : "(none)");
    s.n = 2;
    rt_span(&s, "io->hT", 1, mem, 255, 1, 1); /* the same twin, another length: refused */
    ck_assert_ptr_nonnull(refusal(&s));
}
END_TEST

START_TEST(empty_and_absent_buffers_are_not_judged) {
    RtSpans s = {.n = 0};
    rt_span(&s, "io->x", -1, NULL, 400, 1, 0);
    rt_span(&s, "io->y", 0, mem, 0, 1, 0);
    ck_assert_int_eq(s.n, 0);
    for (int i = 0; i < RT_MAX_SPANS + 5; i++) rt_span(&s, "io->y", i, mem + 8 * i, 8, 1, 0);
    ck_assert_int_eq(s.n, RT_MAX_SPANS);
    ck_assert_ptr_null(refusal(&s));
}
END_TEST

int main(void) {
    Suite *s = suite_create("spans");
    TCase *tc = tcase_create("spans");
    tcase_add_test(tc, written_buffers_lie_apart);
    tcase_add_test(tc, twins_lie_exactly_or_apart);
    tcase_add_test(tc, empty_and_absent_buffers_are_not_judged);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
