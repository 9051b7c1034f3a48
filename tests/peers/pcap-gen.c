/*
 * pcap-gen - write crafted TCP captures for the tests of pcap import.
 *
 * usage: pcap-gen [options] OUT
 *   -l LINK    en10mb (default), vlan (802.1Q), qinq (802.1ad + 802.1Q), sll, sll2,
 *              null, loop, raw, ipv4, ipv6
 *   -6         IPv6 (else IPv4)
 *   -f FORMAT  pcap (default), pcap-ns, pcapng, pcapng-ns
 *   -m MODES   a comma list of what happens to the data segments:
 *                reorder     each pair of segments of a message sent the other way round
 *                retransmit  every second segment sent twice
 *                overlap     after each segment but a message's last, one more that
 *                            covers its second half and the next one's first half
 *                loss        the second segment of each side's first message is not
 *                            captured (a message of 3 segments or more shows a hole)
 *                frag        each data segment in IP fragments of 512 bytes, every
 *                            other segment's fragments last first
 *                midstream   no handshake captured
 *                rst         the server resets the connection instead of the FINs
 *                tcpopts     TCP timestamp options on every segment
 *   -s SNAP    cut every packet to SNAP bytes (also the file's snap length)
 *   -k N       N connections, one after another (client ports 40000, 40001, ...)
 *   -p PORT    the server's port (default 3001)
 *   -M MSS     payload bytes per segment (default 1000)
 *   -c FILE    a message the client sends (the bytes of FILE)
 *   -S FILE    a message the server sends; -c and -S take turns in the order given.
 *              Without them: the client sends 2500 bytes, the server 3000, twice
 *              (byte i of a message is 'a' + i % 26, 'A' + i % 26 for the server)
 *   -i ISN     the client's initial sequence number (default 4294966000: the wrap
 *              is crossed); the server's is ISN + 2^31
 *
 * pcap files go through libpcap's dump API (pcap_open_dead + pcap_dump_open +
 * pcap_dump). libpcap 1.10 cannot write pcapng (there is no pcapng dumper
 * outside Apple's fork), so pcapng files are written here, block by block:
 * a section header, an interface description (with if_tsresol for -ns) and
 * enhanced packet blocks. Timestamps start at 1700000000 s and go 100 µs a
 * packet. Exit status: 0, 1 on an error, 2 on a usage error.
 */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/peers/pktcraft.h"

#define MAX_MSGS 64

static const char *usage_text =
	"usage: pcap-gen [-6] [-l LINK] [-f FORMAT] [-m MODES] [-s SNAP] [-k N] [-p PORT]\n"
	"                [-M MSS] [-i ISN] [-c FILE] [-S FILE]... OUT\n";

struct msg {
	int from_client;
	uint8_t *data; /* owned */
	size_t len;
};

static struct {
	int linktype, tags, v6, ns, pcapng;
	unsigned snap;
	int reorder, retransmit, overlap, loss, frag, midstream, rst, tcpopts;
	unsigned conns, mss;
	uint16_t port;
	uint32_t isn;
	struct msg msgs[MAX_MSGS];
	size_t nmsgs;
	/* output */
	pcap_t *dead;
	pcap_dumper_t *dump;
	FILE *ng;
	int64_t ts_us;
	uint16_t ip_id;
	int failed;
} G;

static int lt_file(int dlt)
{
	return dlt == DLT_RAW ? 101 : dlt;
}

static void ng_write(const void *p, size_t n)
{
	if (fwrite(p, 1, n, G.ng) != n)
		G.failed = 1;
}

static void ng_u32(uint32_t v)
{
	ng_write(&v, 4);
}

static void ng_u16(uint16_t v)
{
	ng_write(&v, 2);
}

static void ng_header(void)
{
	/* section header block */
	ng_u32(0x0A0D0D0A);
	ng_u32(28);
	ng_u32(0x1A2B3C4D);
	ng_u16(1);
	ng_u16(0);
	ng_u32(0xffffffff);
	ng_u32(0xffffffff);
	ng_u32(28);
	/* interface description block, with if_tsresol when in ns */
	ng_u32(1);
	ng_u32(G.ns ? 32 : 20);
	ng_u16((uint16_t)lt_file(G.linktype));
	ng_u16(0);
	ng_u32(G.snap);
	if (G.ns) {
		uint8_t res[4] = {9, 0, 0, 0};
		ng_u16(9);
		ng_u16(1);
		ng_write(res, 4);
		ng_u32(0); /* opt_endofopt */
	}
	ng_u32(G.ns ? 32 : 20);
}

/* One packet of n bytes on the wire, cut to the snap length. */
static void put(const uint8_t *frame, size_t n)
{
	size_t cap = n < G.snap ? n : G.snap;
	int64_t ts = G.ts_us;

	G.ts_us += 100;
	if (G.pcapng) {
		uint64_t t = G.ns ? (uint64_t)ts * 1000 : (uint64_t)ts;
		size_t pad = (4 - cap % 4) % 4;
		uint32_t blen = (uint32_t)(32 + cap + pad);
		static const uint8_t zero[4];
		ng_u32(6);
		ng_u32(blen);
		ng_u32(0);
		ng_u32((uint32_t)(t >> 32));
		ng_u32((uint32_t)t);
		ng_u32((uint32_t)cap);
		ng_u32((uint32_t)n);
		ng_write(frame, cap);
		ng_write(zero, pad);
		ng_u32(blen);
	} else {
		struct pcap_pkthdr h;
		h.ts.tv_sec = ts / 1000000;
		h.ts.tv_usec = G.ns ? ts % 1000000 * 1000 : ts % 1000000;
		h.caplen = (bpf_u_int32)cap;
		h.len = (bpf_u_int32)n;
		pcap_dump((u_char *)G.dump, &h, frame);
	}
}

/* The IP packet ip (n bytes) framed, whole or in fragments. */
static void put_ip(const uint8_t *ip, size_t n, int fragment, int backwards)
{
	static uint8_t f[PK_MAX], fr[PK_MAX];
	size_t hl = G.v6 ? 40 : 20, body = n - hl, nf, k;

	if (!fragment || body <= 512) {
		put(f, pk_frame(f, G.linktype, G.tags, ip, n));
		return;
	}
	nf = (body + 511) / 512;
	for (size_t j = 0; j < nf; j++) {
		size_t i = backwards ? nf - 1 - j : j;
		size_t off = i * 512, len = body - off < 512 ? body - off : 512;
		k = pk_frag(fr, ip, n, off, len, i + 1 < nf, G.ip_id);
		put(f, pk_frame(f, G.linktype, G.tags, fr, k));
	}
	G.ip_id++;
}

struct side {
	uint8_t addr[16];
	uint16_t port;
	uint32_t seq; /* the next sequence number it sends */
};

static void send_seg(const struct side *a, const struct side *b, uint32_t seq, uint8_t flags,
		     const uint8_t *data, size_t len, int fragment, int backwards)
{
	static uint8_t ip[PK_MAX];
	struct pk_seg s;

	memset(&s, 0, sizeof(s));
	s.v6 = G.v6;
	memcpy(s.src, a->addr, 16);
	memcpy(s.dst, b->addr, 16);
	s.sport = a->port;
	s.dport = b->port;
	s.seq = seq;
	s.ack = b->seq;
	s.flags = flags;
	s.data = data;
	s.len = len;
	s.ip_id = G.ip_id++;
	s.tcp_opts = G.tcpopts;
	put_ip(ip, pk_ip(ip, &s), fragment, backwards);
}

/* One message from a to b, in segments, with what the modes do to them. */
static void send_msg(struct side *a, struct side *b, const struct msg *m, int first)
{
	size_t nseg = (m->len + G.mss - 1) / G.mss;
	uint32_t base = a->seq;

	for (size_t j = 0; j < nseg; j++) {
		size_t i = j;
		if (G.reorder && nseg > 1) {
			if (j % 2 == 0 && j + 1 < nseg)
				i = j + 1;
			else if (j % 2 == 1)
				i = j - 1;
		}
		size_t off = i * G.mss, len = m->len - off < G.mss ? m->len - off : G.mss;
		if (!(G.loss && first && i == 1))
			send_seg(a, b, base + (uint32_t)off, PK_ACK | PK_PSH, m->data + off, len, G.frag,
				 G.frag && i % 2);
		if (G.retransmit && i % 2 == 1)
			send_seg(a, b, base + (uint32_t)off, PK_ACK | PK_PSH, m->data + off, len, 0, 0);
		if (G.overlap && i + 1 < nseg) {
			size_t o = off + len / 2, e = off + len + G.mss / 2;
			if (e > m->len)
				e = m->len;
			send_seg(a, b, base + (uint32_t)o, PK_ACK, m->data + o, e - o, 0, 0);
		}
	}
	a->seq = base + (uint32_t)m->len;
	send_seg(b, a, b->seq, PK_ACK, NULL, 0, 0, 0);
}

static void conversation(unsigned k)
{
	struct side c, s;
	int first_c = 1, first_s = 1;

	memset(&c, 0, sizeof(c));
	memset(&s, 0, sizeof(s));
	if (G.v6) {
		c.addr[0] = s.addr[0] = 0xfd;
		c.addr[15] = 1;
		s.addr[15] = 2;
	} else {
		c.addr[0] = s.addr[0] = 10;
		c.addr[3] = 1;
		s.addr[3] = 2;
	}
	c.port = (uint16_t)(40000 + k);
	s.port = G.port;
	c.seq = G.isn;
	s.seq = G.isn + 0x80000000u;
	if (!G.midstream) {
		send_seg(&c, &s, c.seq, PK_SYN, NULL, 0, 0, 0);
		c.seq++;
		send_seg(&s, &c, s.seq, PK_SYN | PK_ACK, NULL, 0, 0, 0);
		s.seq++;
		send_seg(&c, &s, c.seq, PK_ACK, NULL, 0, 0, 0);
	} else {
		c.seq++;
		s.seq++;
	}
	for (size_t i = 0; i < G.nmsgs; i++) {
		const struct msg *m = &G.msgs[i];
		if (m->from_client) {
			send_msg(&c, &s, m, first_c);
			first_c = 0;
		} else {
			send_msg(&s, &c, m, first_s);
			first_s = 0;
		}
	}
	if (G.rst) {
		send_seg(&s, &c, s.seq, PK_RST | PK_ACK, NULL, 0, 0, 0);
		return;
	}
	send_seg(&c, &s, c.seq, PK_FIN | PK_ACK, NULL, 0, 0, 0);
	c.seq++;
	send_seg(&s, &c, s.seq, PK_FIN | PK_ACK, NULL, 0, 0, 0);
	s.seq++;
	send_seg(&c, &s, c.seq, PK_ACK, NULL, 0, 0, 0);
}

static int add_file(const char *path, int from_client)
{
	FILE *f;
	struct msg *m;
	long n;

	if (G.nmsgs == MAX_MSGS) {
		fprintf(stderr, "pcap-gen: more than %d messages\n", MAX_MSGS);
		return -1;
	}
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "pcap-gen: cannot read '%s': %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	m = &G.msgs[G.nmsgs++];
	m->from_client = from_client;
	m->len = (size_t)n;
	m->data = malloc(m->len ? m->len : 1);
	if (!m->data || fread(m->data, 1, m->len, f) != m->len) {
		fprintf(stderr, "pcap-gen: cannot read '%s'\n", path);
		fclose(f);
		return -1;
	}
	fclose(f);
	return 0;
}

static void add_pattern(int from_client, size_t len)
{
	struct msg *m = &G.msgs[G.nmsgs++];

	m->from_client = from_client;
	m->len = len;
	m->data = malloc(len);
	if (!m->data)
		abort();
	for (size_t i = 0; i < len; i++)
		m->data[i] = (uint8_t)((from_client ? 'a' : 'A') + i % 26);
}

static int set_link(const char *s)
{
	static const struct {
		const char *name;
		int dlt, tags;
	} links[] = {
		{"en10mb", DLT_EN10MB, 0}, {"vlan", DLT_EN10MB, 1},     {"qinq", DLT_EN10MB, 2},
		{"sll", DLT_LINUX_SLL, 0}, {"sll2", DLT_LINUX_SLL2, 0}, {"null", DLT_NULL, 0},
		{"loop", DLT_LOOP, 0},     {"raw", DLT_RAW, 0},         {"ipv4", DLT_IPV4, 0},
		{"ipv6", DLT_IPV6, 0},
	};

	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		if (!strcmp(s, links[i].name)) {
			G.linktype = links[i].dlt;
			G.tags = links[i].tags;
			return 0;
		}
	return -1;
}

static int set_modes(const char *s)
{
	static const char *const names[] = {"reorder", "retransmit", "overlap", "loss",
					    "frag",    "midstream",  "rst",     "tcpopts"};
	int *const flags[] = {&G.reorder, &G.retransmit, &G.overlap, &G.loss,
			      &G.frag,    &G.midstream,  &G.rst,     &G.tcpopts};

	while (*s) {
		const char *comma = strchr(s, ',');
		size_t n = comma ? (size_t)(comma - s) : strlen(s), i;
		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strlen(names[i]) == n && !strncmp(s, names[i], n))
				break;
		if (i == sizeof(names) / sizeof(names[0]))
			return -1;
		*flags[i] = 1;
		s += n + (comma ? 1 : 0);
	}
	return 0;
}

/* A decimal number within [lo, hi] into *out; 0 or -1. */
static int num(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	unsigned long v;
	int rc = 1;
	char ebuf[PCAP_ERRBUF_SIZE];

	G.linktype = DLT_EN10MB;
	G.snap = 262144;
	G.conns = 1;
	G.mss = 1000;
	G.port = 3001;
	G.isn = 4294966000u;
	G.ts_us = 1700000000LL * 1000000;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;
		int bad = 0;
		if (!strcmp(a, "-6")) {
			G.v6 = 1;
			continue;
		}
		if (a[0] != '-' || !a[1]) {
			if (out)
				bad = 1;
			out = a;
			if (bad)
				goto usage;
			continue;
		}
		if (!arg || a[2])
			goto usage;
		i++;
		switch (a[1]) {
		case 'l': bad = set_link(arg); break;
		case 'f':
			G.pcapng = !strncmp(arg, "pcapng", 6);
			G.ns = strstr(arg, "-ns") != NULL;
			bad = strcmp(arg, "pcap") && strcmp(arg, "pcap-ns") && strcmp(arg, "pcapng") &&
			      strcmp(arg, "pcapng-ns");
			break;
		case 'm': bad = set_modes(arg); break;
		case 's':
			bad = num(arg, 1, 0x7fffffff, &v);
			G.snap = (unsigned)v;
			break;
		case 'k':
			bad = num(arg, 1, 20000, &v);
			G.conns = (unsigned)v;
			break;
		case 'p':
			bad = num(arg, 1, 65535, &v);
			G.port = (uint16_t)v;
			break;
		case 'M':
			bad = num(arg, 1, 60000, &v);
			G.mss = (unsigned)v;
			break;
		case 'i':
			bad = num(arg, 0, 0xffffffffUL, &v);
			G.isn = (uint32_t)v;
			break;
		case 'c':
		case 'S':
			if (add_file(arg, a[1] == 'c'))
				goto out;
			break;
		default: bad = 1;
		}
		if (bad)
			goto usage;
	}
	if (!out)
		goto usage;
	if ((G.linktype == DLT_IPV4 && G.v6) || (G.linktype == DLT_IPV6 && !G.v6)) {
		fprintf(stderr, "pcap-gen: link type %s does not carry IPv%d\n", G.v6 ? "ipv4" : "ipv6",
			G.v6 ? 6 : 4);
		return 2;
	}
	if (!G.nmsgs) {
		add_pattern(1, 2500);
		add_pattern(0, 3000);
		add_pattern(1, 2500);
		add_pattern(0, 3000);
	}
	if (G.pcapng) {
		G.ng = fopen(out, "wb");
		if (!G.ng) {
			fprintf(stderr, "pcap-gen: cannot write '%s': %s\n", out, strerror(errno));
			goto out;
		}
		ng_header();
	} else {
		G.dead = pcap_open_dead_with_tstamp_precision(G.linktype, (int)G.snap,
							      G.ns ? PCAP_TSTAMP_PRECISION_NANO
								   : PCAP_TSTAMP_PRECISION_MICRO);
		G.dump = G.dead ? pcap_dump_open(G.dead, out) : NULL;
		if (!G.dump) {
			snprintf(ebuf, sizeof(ebuf), "%s", G.dead ? pcap_geterr(G.dead) : "no memory");
			fprintf(stderr, "pcap-gen: cannot write '%s': %s\n", out, ebuf);
			goto out;
		}
	}
	for (unsigned k = 0; k < G.conns; k++)
		conversation(k);
	rc = 0;
out:
	if (G.dump && pcap_dump_flush(G.dump) != 0)
		rc = 1;
	if (G.dump)
		pcap_dump_close(G.dump);
	if (G.dead)
		pcap_close(G.dead);
	if (G.ng && fclose(G.ng) != 0)
		rc = 1;
	if (G.failed)
		rc = 1;
	if (rc)
		fprintf(stderr, "pcap-gen: writing '%s' failed\n", out ? out : "");
	for (size_t i = 0; i < G.nmsgs; i++)
		free(G.msgs[i].data);
	return rc;
usage:
	fputs(usage_text, stderr);
	for (size_t i = 0; i < G.nmsgs; i++)
		free(G.msgs[i].data);
	return 2;
}
