// SPDX-License-Identifier: GPL-2.0-only
/* YeAH-TCP (Baiocchi, Castellani, Vacirca, PFLDnet 2007) as a BPF struct_ops congestion
 * control, registered as "tp_yeah".
 *
 * Ported from Linux net/ipv4/tcp_yeah.c as of v6.18 (stretch-ACK fix of 2020: slow start
 * returns the leftover acked count and both Scalable and Reno modes use
 * tcp_cong_avoid_ai(tp, w, acked); pkts_acked = tcp_vegas_pkts_acked; ssthresh result at least
 * 2).  The torvalds/linux blob read for reference, commit 02e2407858fd, is the 2.6-era file
 * with the same constants and queue logic.
 *
 * Differences from the C original (all of them):
 *  1. The Vegas helpers it reuses (tcp_vegas_init/pkts_acked/state/cwnd_event) are compiled
 *     into this object from bpf/tp_vegas.h: there are no tcp_vegas_* kfuncs on this kernel.
 *  2. init does not lower tp->snd_cwnd_clamp to 0xffffffff/128 (read-only for BPF; matters
 *     only above 33 million packets).
 *  3. get_info (Vegas info) is omitted: struct_ops rejects it on this kernel.
 *  4. tcp_snd_cwnd()/tcp_snd_cwnd_set() are plain reads/writes; undo_cwnd is a BPF program
 *     calling the tcp_reno_undo_cwnd kfunc.
 *  5. Private state struct named tp_yeah.
 */
#include "tp_vegas.h"

char _license[] SEC("license") = "GPL";

#define TCP_YEAH_ALPHA 80   /* lin number of packets queued at the bottleneck */
#define TCP_YEAH_GAMMA 1    /* lin fraction of queue to be removed per rtt */
#define TCP_YEAH_DELTA 3    /* log minimum fraction of cwnd to be removed on loss */
#define TCP_YEAH_EPSILON 1  /* log maximum fraction to be removed on early decongestion */
#define TCP_YEAH_PHY 8      /* lin maximum delta from base */
#define TCP_YEAH_RHO 16     /* lin minimum number of consecutive rtt to consider competition on loss */
#define TCP_YEAH_ZETA 50    /* lin minimum number of state switches to reset reno_count */
#define TCP_SCALABLE_AI_CNT 100U

struct tp_yeah {
	struct tp_vegas vegas; /* must be first */
	__u32 lastQ;
	__u32 doing_reno_now;
	__u32 reno_count;
	__u32 fast_count;
};

SEC("struct_ops")
void BPF_PROG(yeah_init, struct sock *sk)
{
	struct tp_yeah *yeah = inet_csk_ca(sk);

	vegas_init(sk, &yeah->vegas);
	yeah->doing_reno_now = 0;
	yeah->lastQ = 0;
	yeah->reno_count = 2;
}

SEC("struct_ops")
void BPF_PROG(yeah_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct tp_yeah *yeah = inet_csk_ca(sk);

	if (!tcp_is_cwnd_limited(sk))
		return;

	if (tcp_in_slow_start(tp)) {
		acked = tcp_slow_start(tp, acked);
		if (!acked)
			goto do_vegas;
	}

	if (!yeah->doing_reno_now) {
		/* Scalable: +1 per min(cwnd, 100) ACKed */
		tcp_cong_avoid_ai(tp, min(tp->snd_cwnd, TCP_SCALABLE_AI_CNT), acked);
	} else {
		/* Reno */
		tcp_cong_avoid_ai(tp, tp->snd_cwnd, acked);
	}

do_vegas:
	if (after(ack, yeah->vegas.beg_snd_nxt)) {
		/* Vegas calculations only with >= 3 RTT samples (not all from delayed ACKs). */
		if (yeah->vegas.cntRTT > 2) {
			__u32 rtt, queue;
			__u64 bw;

			rtt = yeah->vegas.minRTT;

			/* Q = cwnd·(RTT − baseRTT)/RTT: packets queued at the bottleneck */
			bw = tp->snd_cwnd;
			bw *= rtt - yeah->vegas.baseRTT;
			bw /= rtt;
			queue = bw;

			if (queue > TCP_YEAH_ALPHA ||
			    rtt - yeah->vegas.baseRTT > (yeah->vegas.baseRTT / TCP_YEAH_PHY)) {
				if (queue > TCP_YEAH_ALPHA && tp->snd_cwnd > yeah->reno_count) {
					/* precautionary decongestion: remove the queue, at most cwnd/2 */
					__u32 reduction = min(queue / TCP_YEAH_GAMMA,
							      tp->snd_cwnd >> TCP_YEAH_EPSILON);

					tp->snd_cwnd -= reduction;
					tp->snd_cwnd = max(tp->snd_cwnd, yeah->reno_count);
					tp->snd_ssthresh = tp->snd_cwnd;
				}

				if (yeah->reno_count <= 2)
					yeah->reno_count = max(tp->snd_cwnd >> 1, 2U);
				else
					yeah->reno_count++;

				yeah->doing_reno_now = min(yeah->doing_reno_now + 1, 0xffffffU);
			} else {
				yeah->fast_count++;
				if (yeah->fast_count > TCP_YEAH_ZETA) {
					yeah->reno_count = 2;
					yeah->fast_count = 0;
				}
				yeah->doing_reno_now = 0;
			}

			yeah->lastQ = queue;
		}

		/* Save the extent of the current window for the end of the next RTT. */
		yeah->vegas.beg_snd_una = yeah->vegas.beg_snd_nxt;
		yeah->vegas.beg_snd_nxt = tp->snd_nxt;
		yeah->vegas.beg_snd_cwnd = tp->snd_cwnd;

		/* Wipe the slate clean for the next RTT. */
		yeah->vegas.cntRTT = 0;
		yeah->vegas.minRTT = 0x7fffffff;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(yeah_ssthresh, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct tp_yeah *yeah = inet_csk_ca(sk);
	__u32 reduction;

	if (yeah->doing_reno_now < TCP_YEAH_RHO) {
		/* fast mode: remove the measured queue, between cwnd/8 and cwnd/2 */
		reduction = yeah->lastQ;
		reduction = min(reduction, max(tp->snd_cwnd >> 1, 2U));
		reduction = max(reduction, tp->snd_cwnd >> TCP_YEAH_DELTA);
	} else {
		/* competing with Reno flows: halve */
		reduction = max(tp->snd_cwnd >> 1, 2U);
	}

	yeah->fast_count = 0;
	yeah->reno_count = max(yeah->reno_count >> 1, 2U);

	return max((int)(tp->snd_cwnd - reduction), 2);
}

SEC("struct_ops")
void BPF_PROG(yeah_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tp_yeah *yeah = inet_csk_ca(sk);

	vegas_pkts_acked(&yeah->vegas, sample);
}

SEC("struct_ops")
void BPF_PROG(yeah_state, struct sock *sk, __u8 ca_state)
{
	struct tp_yeah *yeah = inet_csk_ca(sk);

	vegas_state(sk, &yeah->vegas, ca_state);
}

SEC("struct_ops")
void BPF_PROG(yeah_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	struct tp_yeah *yeah = inet_csk_ca(sk);

	vegas_cwnd_event(sk, &yeah->vegas, event);
}

TP_RENO_UNDO(yeah)

SEC(".struct_ops")
struct tcp_congestion_ops tp_yeah = {
	.init = (void *)yeah_init,
	.ssthresh = (void *)yeah_ssthresh,
	.undo_cwnd = (void *)yeah_undo_cwnd,
	.cong_avoid = (void *)yeah_cong_avoid,
	.set_state = (void *)yeah_state,
	.cwnd_event = (void *)yeah_cwnd_event,
	.pkts_acked = (void *)yeah_pkts_acked,
	.name = "tp_yeah",
};
