/* Tests for the record of a model's training calls (runtime/rt_calls.c), host only: a backward
 * call whose T, N or lengths differ from its training forward's, or a weights call whose dy or
 * dhT entries differ in being NULL from its data call's, is refused by the argument's name; a
 * weights call before any data call is refused, a data call after the weights changed, and any
 * backward call before the model's first training forward or on a reserve whose forward failed;
 * calls on another reserve than the last forward's are not judged. check_runtime's api case runs the same through the library on a GPU. */
#include <check.h>
#include <string.h>

#include "../runtime/rt_calls.h"
#include "testutil.h"

static char reserve_a, reserve_b; /* two reserves' addresses; never read */
static const float dev_word = 0;  /* an adjoint's address; never read */

static int agree(const RtCalls *c, const rnncc_grad_io *io, const void *reserve, int weights, const char *want) {
    char why[512] = "";
    int ok = rt_calls_agree(c, io, reserve, 2, 2, weights, why, sizeof why);
    if (want) ck_assert_msg(strstr(why, want), "got \"%s\", want \"%s\"", why, want);
    else ck_assert_msg(ok, "refused: %s", why);
    return ok;
}

START_TEST(backward_calls_match_their_forward) {
    RtCalls c = {0};
    int lengths[3] = {4, 2, 0}, other[3] = {4, 1, 0};
    rnncc_io io = {.T = 4, .N = 3, .lengths = lengths};
    rnncc_grad_io g = {.T = 4, .N = 3, .lengths = lengths};
    ck_assert(!agree(&c, &g, &reserve_a, 0, "reserve: no training forward has run on this model"));
    rt_calls_forward(&c, &io, NULL, 1); /* inference: still none */
    ck_assert(!agree(&c, &g, &reserve_b, 1, "reserve: no training forward has run on this model"));
    rt_calls_forward(&c, &io, &reserve_a, 1);
    agree(&c, &g, &reserve_a, 0, NULL);
    g.T = 5;
    ck_assert(!agree(&c, &g, &reserve_a, 0, "io->T is 5, but the training forward on this reserve had 4"));
    g.T = 4, g.N = 2;
    ck_assert(!agree(&c, &g, &reserve_a, 0, "io->N is 2, but the training forward on this reserve had 3"));
    g.N = 3, g.lengths = NULL;
    ck_assert(!agree(&c, &g, &reserve_a, 0, "io->lengths is NULL, but the training forward on this reserve had lengths"));
    g.lengths = other;
    ck_assert(!agree(&c, &g, &reserve_a, 1, "io->lengths[1] is 1, but the training forward on this reserve had 2"));
    /* the forward's lengths were copied: the caller may reuse its array */
    lengths[1] = 1;
    ck_assert(!agree(&c, &g, &reserve_a, 0, "io->lengths[1] is 1"));
    /* another reserve is not judged */
    agree(&c, &g, &reserve_b, 1, NULL);
    /* a forward without lengths, then a backward with them */
    io.lengths = NULL;
    rt_calls_forward(&c, &io, &reserve_a, 1);
    ck_assert(!agree(&c, &g, &reserve_a, 0, "io->lengths is given, but the training forward on this reserve had none"));
    /* a failed forward leaves its reserve without one (another reserve is not judged); an inference forward (no
     * reserve) changes nothing */
    rt_calls_forward(&c, &io, &reserve_a, 0);
    ck_assert(!agree(&c, &g, &reserve_a, 1, "reserve: the last training forward on it failed"));
    ck_assert(!agree(&c, &g, &reserve_a, 0, "reserve: the last training forward on it failed"));
    agree(&c, &g, &reserve_b, 0, NULL);
    rt_calls_forward(&c, &io, &reserve_a, 1);
    rt_calls_forward(&c, &io, NULL, 1);
    ck_assert(!agree(&c, &g, &reserve_a, 0, "io->lengths is given"));
    rt_calls_free(&c);
}
END_TEST

START_TEST(weights_call_matches_its_data_call) {
    RtCalls c = {0};
    rnncc_io io = {.T = 3, .N = 2};
    rt_calls_forward(&c, &io, &reserve_a, 1);
    const float *dy[2] = {&dev_word, NULL}, *dhT[2] = {NULL, &dev_word}, *none[2] = {NULL, NULL};
    rnncc_grad_io g = {.T = 3, .N = 2, .dy = dy, .dhT = dhT};
    ck_assert(!agree(&c, &g, &reserve_a, 1, "reserve: rnncc_backward_data has not run on it since its training forward"));
    rt_calls_data(&c, &g, &reserve_a, 2, 2, 1);
    agree(&c, &g, &reserve_a, 1, NULL);
    agree(&c, &g, &reserve_a, 1, NULL); /* again: SET, then ADD */
    rnncc_grad_io h = g;
    h.dy = NULL;
    ck_assert(!agree(&c, &h, &reserve_a, 1,
                     "io->dy[0] is NULL, but the rnncc_backward_data call on this reserve was given it: give "
                     "rnncc_backward_weights the data call's rnncc_grad_io"));
    h.dy = dy, h.dhT = none;
    ck_assert(!agree(&c, &h, &reserve_a, 1, "io->dhT[1] is NULL, but the rnncc_backward_data call on this reserve was given it"));
    const float *both[2] = {&dev_word, &dev_word};
    h.dhT = both;
    ck_assert(!agree(&c, &h, &reserve_a, 1, "io->dhT[0] is given, but the rnncc_backward_data call on this reserve had it NULL"));
    /* a NULL array and an array of NULL entries are the same; another address is the same adjoint */
    const float *moved[2] = {&dev_word + 1, NULL};
    h.dy = moved, h.dhT = dhT;
    agree(&c, &h, &reserve_a, 1, NULL);
    /* a data call's adjoints replace the last's; its weights call may be given them */
    rt_calls_data(&c, &h, &reserve_a, 2, 2, 1);
    agree(&c, &h, &reserve_a, 1, NULL);
    rnncc_grad_io z = {.T = 3, .N = 2, .dy = none, .dhT = NULL};
    rt_calls_data(&c, &z, &reserve_a, 2, 2, 1);
    z.dy = NULL, z.dhT = none;
    agree(&c, &z, &reserve_a, 1, NULL);
    /* a failed data call leaves nothing a weights call may read */
    rt_calls_data(&c, &z, &reserve_a, 2, 2, 0);
    ck_assert(!agree(&c, &z, &reserve_a, 1, "reserve: rnncc_backward_data has not run on it"));
    /* a new forward wants a new data call */
    rt_calls_data(&c, &z, &reserve_a, 2, 2, 1);
    rt_calls_forward(&c, &io, &reserve_a, 1);
    ck_assert(!agree(&c, &z, &reserve_a, 1, "reserve: rnncc_backward_data has not run on it"));
    /* a data call on another reserve does not count for this one */
    rt_calls_data(&c, &z, &reserve_b, 2, 2, 1);
    ck_assert(!agree(&c, &z, &reserve_a, 1, "reserve: rnncc_backward_data has not run on it"));
    rt_calls_free(&c);
}
END_TEST

START_TEST(data_call_after_the_weights_changed) {
    RtCalls c = {0};
    rnncc_io io = {.T = 2, .N = 1};
    rnncc_grad_io g = {.T = 2, .N = 1};
    rt_calls_weights_changed(&c, "rnncc_model_set_param"); /* before any forward: nothing to judge */
    rt_calls_forward(&c, &io, &reserve_a, 1);
    agree(&c, &g, &reserve_a, 0, NULL);
    rt_calls_weights_changed(&c, "rnncc_model_set_param");
    ck_assert(!agree(&c, &g, &reserve_a, 0,
                     "reserve: the weights changed (rnncc_model_set_param) since the training forward on it, and "
                     "rnncc_backward_data recomputes from them: change them after rnncc_backward_data, or run the "
                     "forward again"));
    agree(&c, &g, &reserve_b, 0, NULL); /* another reserve: not judged */
    rt_calls_forward(&c, &io, &reserve_a, 1); /* the forward again */
    agree(&c, &g, &reserve_a, 0, NULL);
    rt_calls_data(&c, &g, &reserve_a, 2, 2, 1);
    rt_calls_weights_changed(&c, "rnncc_model_weights_changed"); /* after the data call: the weights call may follow */
    agree(&c, &g, &reserve_a, 1, NULL);
    ck_assert(!agree(&c, &g, &reserve_a, 0, "the weights changed (rnncc_model_weights_changed)"));
    rt_calls_forward(&c, &io, &reserve_a, 0); /* a failed forward forgets the change */
    rt_calls_weights_changed(&c, "rnncc_model_set_param"); /* and a change after it is not noted */
    rt_calls_forward(&c, &io, &reserve_a, 1);
    agree(&c, &g, &reserve_a, 0, NULL);
    rt_calls_free(&c);
}
END_TEST

int main(void) {
    Suite *s = suite_create("calls");
    TCase *tc = tcase_create("calls");
    tcase_add_test(tc, backward_calls_match_their_forward);
    tcase_add_test(tc, weights_call_matches_its_data_call);
    tcase_add_test(tc, data_call_after_the_weights_changed);
    suite_add_tcase(s, tc);
    return tu_run_suite(s);
}
