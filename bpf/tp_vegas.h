/* SPDX-License-Identifier: GPL-2.0 */
/* Vegas state and helpers for the ports that use them (vegas, yeah).
 *
 * The kernel exports tcp_vegas_init/pkts_acked/state/cwnd_event from tcp_vegas.c for YeAH (and
 * Veno); this kernel has no Vegas built in and no such kfuncs, so each object compiles its own
 * copy of these functions (same code as net/ipv4/tcp_vegas.c, v6.18).  Rate-based "actual"
 * throughput is measured by the minimum RTT of the last RTT (µs, +1 so it is never zero).
 */
#ifndef TP_VEGAS_H
#define TP_VEGAS_H

#include "tp_common.h"

struct tp_vegas {
	__u32 beg_snd_nxt;    /* right edge during last RTT */
	__u32 beg_snd_una;    /* left edge  during last RTT */
	__u32 beg_snd_cwnd;   /* saves the size of the cwnd */
	__u8 doing_vegas_now; /* if true, do vegas for this RTT */
	__u16 cntRTT;         /* # of RTTs measured within last RTT */
	__u32 minRTT;         /* min of RTTs measured within last RTT (in usec) */
	__u32 baseRTT;        /* the min of all Vegas RTT measurements seen (in usec) */
};

/* Begin taking Vegas samples next time we send something. */
static __always_inline void vegas_enable(struct sock *sk, struct tp_vegas *vegas)
{
	vegas->doing_vegas_now = 1;
	vegas->beg_snd_nxt = tcp_sk(sk)->snd_nxt; /* beginning of the next send window */
	vegas->cntRTT = 0;
	vegas->minRTT = 0x7fffffff;
}

static __always_inline void vegas_init(struct sock *sk, struct tp_vegas *vegas)
{
	vegas->baseRTT = 0x7fffffff;
	vegas_enable(sk, vegas);
}

/* min-filter RTT samples within an RTT (minRTT) and over the connection (baseRTT) */
static __always_inline void vegas_pkts_acked(struct tp_vegas *vegas, const struct ack_sample *sample)
{
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	vrtt = sample->rtt_us + 1; /* Never allow zero rtt or baseRTT */
	if (vrtt < vegas->baseRTT)
		vegas->baseRTT = vrtt;
	vegas->minRTT = min(vegas->minRTT, vrtt);
	vegas->cntRTT++;
}

static __always_inline void vegas_state(struct sock *sk, struct tp_vegas *vegas, __u8 ca_state)
{
	if (ca_state == TCP_CA_Open)
		vegas_enable(sk, vegas);
	else
		vegas->doing_vegas_now = 0;
}

/* Restart from idle: wait for fresh RTT samples before any Vegas decision. */
static __always_inline void vegas_cwnd_event(struct sock *sk, struct tp_vegas *vegas,
					     enum tcp_ca_event event)
{
	if (event == CA_EVENT_CWND_RESTART || event == CA_EVENT_TX_START)
		vegas_init(sk, vegas);
}

#endif /* TP_VEGAS_H */
