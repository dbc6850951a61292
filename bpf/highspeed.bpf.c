// SPDX-License-Identifier: GPL-2.0-only
/* HighSpeed TCP (Sally Floyd, RFC 3649) as a BPF struct_ops congestion control, registered as
 * "tp_highspeed".
 *
 * Ported from Linux net/ipv4/tcp_highspeed.c as of v6.18 (cong_avoid(sk, ack, acked),
 * undo_cwnd = tcp_reno_undo_cwnd; the AIMD table is the same as in the torvalds/linux blob
 * read for reference, commit 03fba0479600).
 *
 * Differences from the C original (all of them):
 *  1. The table walk (linear up/down search for ai such that
 *     table[ai-1].cwnd < snd_cwnd <= table[ai].cwnd) is replaced by a binary search with a
 *     fixed 7 steps for the same index (smallest ai with snd_cwnd <= table[ai].cwnd, capped at
 *     the last entry): the verifier rejects the original loop (too many jumps).  Every table
 *     access carries an explicit bounds check for the verifier.
 *  2. init does not lower tp->snd_cwnd_clamp to 0xffffffff/128: that field is read-only for
 *     BPF.  The clamp only matters above 33 million packets.
 *  3. tcp_snd_cwnd()/tcp_snd_cwnd_set() are plain reads/writes of tp->snd_cwnd.
 *  4. undo_cwnd is a BPF program calling the tcp_reno_undo_cwnd kfunc.
 */
#include "tp_common.h"

char _license[] SEC("license") = "GPL";

/* From AIMD tables from RFC 3649 appendix B, with fixed-point MD scaled <<8. */
struct hstcp_aimd_val {
	__u32 cwnd;
	__u32 md;
};

static const struct hstcp_aimd_val hstcp_aimd_vals[] = {
	{38, 128},    {118, 112},   {221, 104},   {347, 98},    {495, 93},    {663, 89},
	{851, 86},    {1058, 83},   {1284, 81},   {1529, 78},   {1793, 76},   {2076, 74},
	{2378, 72},   {2699, 71},   {3039, 69},   {3399, 68},   {3778, 66},   {4177, 65},
	{4596, 64},   {5036, 62},   {5497, 61},   {5979, 60},   {6483, 59},   {7009, 58},
	{7558, 57},   {8130, 56},   {8726, 55},   {9346, 54},   {9991, 53},   {10661, 52},
	{11358, 52},  {12082, 51},  {12834, 50},  {13614, 49},  {14424, 48},  {15265, 48},
	{16137, 47},  {17042, 46},  {17981, 45},  {18955, 45},  {19965, 44},  {21013, 43},
	{22101, 43},  {23230, 42},  {24402, 41},  {25618, 41},  {26881, 40},  {28193, 39},
	{29557, 39},  {30975, 38},  {32450, 38},  {33986, 37},  {35586, 36},  {37253, 36},
	{38992, 35},  {40808, 35},  {42707, 34},  {44694, 33},  {46776, 33},  {48961, 32},
	{51258, 32},  {53677, 31},  {56230, 30},  {58932, 30},  {61799, 29},  {64851, 28},
	{68113, 28},  {71617, 27},  {75401, 26},  {79517, 26},  {84035, 25},  {89053, 24},
};

#define HSTCP_AIMD_MAX (sizeof(hstcp_aimd_vals) / sizeof(hstcp_aimd_vals[0]))

struct tp_hstcp {
	__u32 ai;
};

/* smallest i with cwnd <= table[i].cwnd, or HSTCP_AIMD_MAX - 1 (= the original walk's result) */
static __always_inline __u32 hstcp_index(__u32 cwnd)
{
	__u32 lo = 0, hi = HSTCP_AIMD_MAX - 1;
	int step;

	for (step = 0; step < 7; step++) { /* 2^7 = 128 > 73 entries */
		__u32 mid;

		if (lo >= hi)
			break;
		mid = (lo + hi) / 2;
		if (mid >= HSTCP_AIMD_MAX)
			break;
		if (cwnd > hstcp_aimd_vals[mid].cwnd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

SEC("struct_ops")
void BPF_PROG(hstcp_init, struct sock *sk)
{
	struct tp_hstcp *ca = inet_csk_ca(sk);

	ca->ai = 0;
}

SEC("struct_ops")
void BPF_PROG(hstcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_hstcp *ca = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		tcp_slow_start(tp, acked);
	} else {
		/* Update AIMD parameters: table[ai-1].cwnd < snd_cwnd <= table[ai].cwnd */
		ca->ai = hstcp_index(tp->snd_cwnd);

		/* Do additive increase: cwnd = cwnd + a(w) / cwnd, a(w) = ai + 1 */
		if (tp->snd_cwnd < tp->snd_cwnd_clamp) {
			tp->snd_cwnd_cnt += ca->ai + 1;
			if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
				tp->snd_cwnd_cnt -= tp->snd_cwnd;
				tp->snd_cwnd++;
			}
		}
	}
}

SEC("struct_ops")
__u32 BPF_PROG(hstcp_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct tp_hstcp *ca = inet_csk_ca(sk);
	__u32 ai = ca->ai;

	if (ai >= HSTCP_AIMD_MAX)
		ai = HSTCP_AIMD_MAX - 1;
	/* Do multiplicative decrease: cwnd × (1 − b(w)), b(w) = md/256 */
	return max(tp->snd_cwnd - ((tp->snd_cwnd * hstcp_aimd_vals[ai].md) >> 8), 2U);
}

TP_RENO_UNDO(hstcp)

SEC(".struct_ops")
struct tcp_congestion_ops tp_highspeed = {
	.init = (void *)hstcp_init,
	.ssthresh = (void *)hstcp_ssthresh,
	.cong_avoid = (void *)hstcp_cong_avoid,
	.undo_cwnd = (void *)hstcp_undo_cwnd,
	.name = "tp_highspeed",
};
