/*
 * pktcraft.h - packets made in memory for the tests of pcap import: TCP
 * segments in IPv4 or IPv6 (extension headers and fragments too), framed for
 * each link type tap/pcap/tcpflow.h reads. Header-only; tests/peers/pcap-gen.c and
 * tests/unit/test-tcpflow.c share it. Checksums are right, as a capture
 * would have them; every function writes into a buffer the caller gives (of
 * PK_MAX bytes) and returns the length written.
 */
#ifndef MCPTAP_PKTCRAFT_H
#define MCPTAP_PKTCRAFT_H

#include <pcap/dlt.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PK_MAX 70000 /* the largest frame made */

#define PK_FIN 0x01
#define PK_SYN 0x02
#define PK_RST 0x04
#define PK_PSH 0x08
#define PK_ACK 0x10

/* One TCP segment, and the IP packet around it. */
struct pk_seg {
	int v6;                   /* IPv6 (else IPv4) */
	uint8_t src[16], dst[16]; /* the first 4 bytes for IPv4 */
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;       /* PK_* */
	const uint8_t *data; /* borrowed payload */
	size_t len;
	uint16_t ip_id; /* IPv4 identification */
	int v6_ext;     /* IPv6: a hop-by-hop and a destination options header before TCP */
	int tcp_opts;   /* 12 bytes of TCP options (NOPs and a timestamp) */
};

static inline void pk_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void pk_put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The ones' complement sum of n bytes, added to sum. */
static inline uint32_t pk_sum(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	return sum;
}

static inline uint16_t pk_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* The IPv4 header's checksum, set in place. */
static inline void pk_ip4_csum(uint8_t *ip)
{
	size_t ihl = (size_t)(ip[0] & 15) * 4;

	ip[10] = ip[11] = 0;
	pk_put16(ip + 10, pk_fold(pk_sum(0, ip, ihl)));
}

/* The whole IP packet of segment s: returns its length. */
static inline size_t pk_ip(uint8_t *out, const struct pk_seg *s)
{
	size_t iph = s->v6 ? 40 + (s->v6_ext ? 16 : 0) : 20;
	size_t th = 20 + (s->tcp_opts ? 12 : 0);
	uint8_t *tcp = out + iph;
	size_t tl = th + s->len;
	uint32_t sum;

	memset(out, 0, iph + th);
	pk_put16(tcp, s->sport);
	pk_put16(tcp + 2, s->dport);
	pk_put32(tcp + 4, s->seq);
	pk_put32(tcp + 8, s->ack);
	tcp[12] = (uint8_t)((th / 4) << 4);
	tcp[13] = s->flags;
	pk_put16(tcp + 14, 65535);
	if (s->tcp_opts) {
		static const uint8_t opts[12] = {1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2};
		memcpy(tcp + 20, opts, sizeof(opts));
	}
	if (s->len)
		memcpy(tcp + th, s->data, s->len);
	if (s->v6) {
		out[0] = 0x60;
		pk_put16(out + 4, (uint16_t)(iph - 40 + tl));
		out[6] = s->v6_ext ? 0 : 6;
		out[7] = 64;
		memcpy(out + 8, s->src, 16);
		memcpy(out + 24, s->dst, 16);
		if (s->v6_ext) {
			out[40] = 60; /* hop-by-hop (PadN), then destination options (PadN), then TCP */
			out[41] = 0;
			out[42] = 1;
			out[43] = 4;
			out[48] = 6;
			out[49] = 0;
			out[50] = 1;
			out[51] = 4;
		}
		sum = pk_sum(0, s->src, 16);
		sum = pk_sum(sum, s->dst, 16);
		sum += (uint32_t)(tl >> 16) + (uint32_t)(tl & 0xffff) + 6;
	} else {
		out[0] = 0x45;
		pk_put16(out + 2, (uint16_t)(20 + tl));
		pk_put16(out + 4, s->ip_id);
		out[6] = 0x40; /* DF */
		out[8] = 64;
		out[9] = 6;
		memcpy(out + 12, s->src, 4);
		memcpy(out + 16, s->dst, 4);
		pk_ip4_csum(out);
		sum = pk_sum(0, s->src, 4);
		sum = pk_sum(sum, s->dst, 4);
		sum += (uint32_t)tl + 6;
	}
	pk_put16(tcp + 16, pk_fold(pk_sum(sum, tcp, tl)));
	return iph + tl;
}

/*
 * A fragment of the IP packet ip (n bytes, no fragment header of its own):
 * bytes [off, off + len) of what follows its fixed header (an offset a
 * multiple of 8), more when others follow. IPv4 keeps the header (DF off);
 * IPv6 puts a fragment header with identification id after the fixed one.
 */
static inline size_t pk_frag(uint8_t *out, const uint8_t *ip, size_t n, size_t off, size_t len, int more,
			     uint32_t id)
{
	if (ip[0] >> 4 == 6) {
		memcpy(out, ip, 40);
		pk_put16(out + 4, (uint16_t)(8 + len));
		out[6] = 44;
		out[40] = ip[6];
		out[41] = 0;
		pk_put16(out + 42, (uint16_t)(off | (more ? 1 : 0)));
		pk_put32(out + 44, id);
		memcpy(out + 48, ip + 40 + off, len);
		(void)n;
		return 48 + len;
	}
	memcpy(out, ip, 20);
	pk_put16(out + 2, (uint16_t)(20 + len));
	pk_put16(out + 4, (uint16_t)id);
	pk_put16(out + 6, (uint16_t)((more ? 0x2000 : 0) | off / 8));
	pk_ip4_csum(out);
	memcpy(out + 20, ip + 20 + off, len);
	return 20 + len;
}

/*
 * The IP packet ip (n bytes) in a frame of linktype (a DLT_ value, or
 * LINKTYPE_RAW 101). Ethernet gets tags VLAN tags (1: 802.1Q; 2: 802.1ad
 * then 802.1Q). NULL writes the family in this machine's order; LOOP in
 * network order; IPv6 is family 30 (Darwin) for both.
 */
static inline size_t pk_frame(uint8_t *out, int linktype, int tags, const uint8_t *ip, size_t n)
{
	int v6 = ip[0] >> 4 == 6;
	uint16_t et = v6 ? 0x86dd : 0x0800;
	size_t h = 0;

	switch (linktype) {
	case DLT_EN10MB: {
		static const uint8_t macs[12] = {2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2};
		memcpy(out, macs, 12);
		h = 12;
		if (tags >= 2) {
			pk_put16(out + h, 0x88a8);
			pk_put16(out + h + 2, 100);
			h += 4;
		}
		if (tags >= 1) {
			pk_put16(out + h, 0x8100);
			pk_put16(out + h + 2, 200);
			h += 4;
		}
		pk_put16(out + h, et);
		h += 2;
		break;
	}
	case DLT_LINUX_SLL:
		memset(out, 0, 16);
		pk_put16(out + 2, 772); /* ARPHRD_LOOPBACK */
		pk_put16(out + 4, 6);
		pk_put16(out + 14, et);
		h = 16;
		break;
	case DLT_LINUX_SLL2:
		memset(out, 0, 20);
		pk_put16(out, et);
		pk_put32(out + 4, 1);
		pk_put16(out + 8, 772);
		out[11] = 6;
		h = 20;
		break;
	case DLT_NULL: {
		uint32_t af = v6 ? 30 : 2;
		memcpy(out, &af, 4);
		h = 4;
		break;
	}
	case DLT_LOOP:
		pk_put32(out, v6 ? 30 : 2);
		h = 4;
		break;
	default: /* DLT_RAW, 101, DLT_IPV4, DLT_IPV6 */ break;
	}
	memcpy(out + h, ip, n);
	return h + n;
}

/* The frame of segment s: pk_ip then pk_frame. */
static inline size_t pk_segment(uint8_t *out, int linktype, int tags, const struct pk_seg *s)
{
	static uint8_t ip[PK_MAX];
	size_t n = pk_ip(ip, s);

	return pk_frame(out, linktype, tags, ip, n);
}

#endif
