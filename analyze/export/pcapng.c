/*
 * pcapng.c - export -T pcapng: a capture as packets that Wireshark and tshark
 * open. libpcap writes only classic pcap, so the blocks are made here, as the
 * pcapng spec says: a Section Header Block, an Interface Description Block
 * per link type (written before its first packet), Enhanced Packet Blocks
 * with the direction in epb_flags and what the packet carries in
 * opt_comment; little-endian, every block padded to 32 bits, its total
 * length at both ends.
 *
 * An HTTP session is written as the TCP connections it came on (raw IPv4,
 * LINKTYPE_RAW): one per client connection, with its three-way handshake,
 * then each exchange's request and response as the HTTP/1.1 bytes rebuilt
 * from what the file holds (request line, headers as stored, body; status
 * line, headers, a body or the SSE events), in segments of at most SEG_MAX
 * bytes, at the times stored, and a FIN at the end. `mcptap import` reads
 * such a file back to the same sessions and messages.
 *
 * What travelled on no TCP stream rebuilt here (stdio messages and stderr
 * lines, and the messages of an HTTP session whose exchanges -Y left out) is
 * written as exported PDUs (LINKTYPE_WIRESHARK_UPPER_PDU) naming Wireshark's
 * json dissector (its text lines dissector for stderr): a packet each.
 *
 * Memory: per session, a small state per client connection, and what an
 * exchange in flight holds until it can be written (its heads, and a body
 * whose length its Content-Length must say).
 */
#include <arpa/inet.h> /* inet_pton */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyze/export/export.h"
#include "schema/map.h"
#include "tap/http/httphdr.h"

#define SEG_MAX 1400     /* TCP payload bytes per packet */
#define SNAPLEN 262144   /* the largest packet Wireshark reads whole */
#define LINKTYPE_RAW 101 /* raw IPv4 or IPv6 */
#define LINKTYPE_UPPER_PDU 252
#define EPB_INBOUND 1  /* epb_flags: to the server (client to server) */
#define EPB_OUTBOUND 2 /* from the server */
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_PSH 0x08
#define TCP_ACK 0x10
#define LOOPBACK 0x7f000001u
#define PORTS_FROM 49152 /* invented client ports: the ephemeral range first */

enum iface { IF_TCP, IF_PDU, IF_N };

/* How a body is framed on the wire. */
enum frame {
	FR_NONE,    /* no body */
	FR_LENGTH,  /* Content-Length */
	FR_CHUNKED, /* Transfer-Encoding: chunked */
	FR_CLOSE,   /* to the connection's close */
};

/* Where a response's head is. */
enum head {
	HEAD_NONE,  /* no response came */
	HEAD_TIMED, /* written at its time (first_byte_ns) */
	HEAD_HELD,  /* held with its body until the exchange ends: its length must be said */
	HEAD_SENT,
};

/* What a head's fields said. */
struct fields {
	int chunked;    /* Transfer-Encoding names chunked */
	int close;      /* Connection: close */
	size_t cl_at;   /* where the Content-Length value goes in the head; SIZE_MAX: none */
	char cl[24];    /* the value stored, for a head written without a body */
	long long cl_n; /* ... as a number (-1: not one) */
};

/* The exchange in flight on a connection. */
struct hx {
	int64_t seq;
	int64_t t, first, end; /* ns since the session began; end < 0: it never ended */
	int status;            /* the response's; 0: none came */
	int req_wait;          /* its request waits for its body, a message */
	enum frame req_fr;
	struct fields rqf, rsf;
	enum head head;
	enum frame fr;           /* its response body's */
	int sse;                 /* the response body is SSE events */
	int complete;            /* its outcome is complete */
	int client_closes;       /* ... client-gone: the client closes */
	int64_t body_t;          /* when the body held last grew */
	struct mt_buf req, resp; /* the heads, until written */
	struct mt_buf body;      /* response body bytes not written yet (unframed) */
	struct mt_buf note;      /* ... what they carry, for their comment */
	struct mt_buf what;      /* "POST /mcp" */
};

/* A client connection of the session: a TCP connection once opened. */
struct tconn {
	int64_t num;  /* the exchange rows' conn */
	uint32_t cip; /* the client's address and port */
	uint16_t cport;
	uint32_t nxt[2]; /* the next sequence number: [0] the client's, [1] the server's */
	int open;        /* handshake made, no FIN yet */
	unsigned opened; /* times opened: each a new port and ISNs */
	int64_t last;    /* its last packet's time */
	struct hx *x;    /* its exchange in flight (owned), or NULL */
};

/* An export's state (ex_sink.priv). */
struct pcn {
	int iface[IF_N]; /* each interface's number, -1 until its IDB is written */
	int nifaces;
	int ioerr;                                    /* the errno of the first write that failed, or 0 */
	struct mt_buf blk, pkt, seg, tmp, tmp2, note; /* scratch */
	struct mt_buf ep;                             /* the legacy endpoint, redacted */
	uint16_t ip_id;
	unsigned char used[65536 / 8]; /* client ports given in the file */
	uint32_t pnext;                /* the next invented port's index */
	uint32_t gen;                  /* times every port was given: client addresses move on */
	/* The session being written: */
	int64_t sid;
	uint64_t t0;            /* its start, ns since the epoch */
	int64_t last;           /* its last packet's time */
	uint32_t cip, sip;      /* client and server addresses */
	uint16_t cport0, sport; /* the first connection's client port (0: unknown), server port */
	int legacy;             /* legacy HTTP+SSE: the GET stream begins with the endpoint */
	struct tconn *conns;
	size_t nconns, capconns;
	struct mt_map by_conn; /* conn number -> index in conns */
	struct mt_map by_exch; /* an exchange in flight's seq -> index in conns */
	size_t *busy;          /* conns with an exchange in flight */
	size_t nbusy, capbusy;
};

/* ---- pcapng blocks ---- */

static void put16(struct mt_buf *b, uint16_t v)
{
	unsigned char c[2] = {(unsigned char)v, (unsigned char)(v >> 8)};
	mt_buf_append(b, c, 2);
}

static void put32(struct mt_buf *b, uint32_t v)
{
	put16(b, (uint16_t)v);
	put16(b, (uint16_t)(v >> 16));
}

/* v in network order (the exported PDU's tags). */
static void put16be(struct mt_buf *b, uint16_t v)
{
	unsigned char c[2] = {(unsigned char)(v >> 8), (unsigned char)v};
	mt_buf_append(b, c, 2);
}

static void pad4(struct mt_buf *b)
{
	static const char zero[4];
	mt_buf_append(b, zero, (4 - b->len % 4) % 4);
}

static void block_begin(struct mt_buf *b, uint32_t type)
{
	mt_buf_reset(b);
	put32(b, type);
	put32(b, 0); /* its length, set by block_end */
}

/* An option: code, length, value padded to 32 bits. */
static void option(struct mt_buf *b, uint16_t code, const void *v, size_t n)
{
	put16(b, code);
	put16(b, (uint16_t)n);
	mt_buf_append(b, v, n);
	pad4(b);
}

static void emit(struct pcn *p, FILE *f, const void *v, size_t n)
{
	if (!p->ioerr && n && fwrite(v, 1, n, f) != n)
		p->ioerr = errno ? errno : EIO;
}

/* The block's options end, its length at both ends, and out it goes. */
static void block_end(struct pcn *p, FILE *f, int options)
{
	struct mt_buf *b = &p->blk;
	uint32_t len;

	if (options)
		option(b, 0, NULL, 0); /* opt_endofopt */
	len = (uint32_t)b->len + 4;
	put32(b, len);
	for (int i = 0; i < 4; i++)
		b->data[4 + i] = (char)(len >> (8 * i));
	emit(p, f, b->data, b->len);
}

static void write_shb(struct pcn *p, FILE *f)
{
	const char *app = "mcptap " MCPTAP_VERSION;

	block_begin(&p->blk, 0x0A0D0D0A);
	put32(&p->blk, 0x1A2B3C4D); /* byte-order magic */
	put16(&p->blk, 1);          /* version 1.0 */
	put16(&p->blk, 0);
	put32(&p->blk, 0xFFFFFFFF); /* section length: not given */
	put32(&p->blk, 0xFFFFFFFF);
	option(&p->blk, 4, app, strlen(app)); /* shb_userappl */
	block_end(p, f, 1);
}

/* The number of interface i, its IDB written first when it is new. */
static uint32_t iface(struct pcn *p, FILE *f, enum iface i)
{
	static const char *const name[IF_N] = {"mcptap-http", "mcptap-messages"};
	static const char *const what[IF_N] = {
		"HTTP exchanges as the TCP streams they came on",
		"JSON-RPC messages and stderr lines, one exported PDU each",
	};
	const unsigned char nano = 9; /* if_tsresol: nanoseconds */

	if (p->iface[i] >= 0)
		return (uint32_t)p->iface[i];
	block_begin(&p->blk, 1);
	put16(&p->blk, i == IF_TCP ? LINKTYPE_RAW : LINKTYPE_UPPER_PDU);
	put16(&p->blk, 0);
	put32(&p->blk, SNAPLEN);
	option(&p->blk, 2, name[i], strlen(name[i]));
	option(&p->blk, 3, what[i], strlen(what[i]));
	option(&p->blk, 9, &nano, 1);
	block_end(p, f, 1);
	p->iface[i] = p->nifaces++;
	return (uint32_t)p->iface[i];
}

/*
 * An Enhanced Packet Block: caplen bytes of data (of a packet of origlen) on
 * interface i at t (ns since the session began), its direction and comment.
 */
static void write_epb(struct pcn *p, FILE *f, enum iface i, int64_t t, const void *data, size_t caplen,
		      size_t origlen, uint32_t dir, const char *note)
{
	uint32_t id = iface(p, f, i);
	uint64_t ts = p->t0 + (uint64_t)(t > 0 ? t : 0);
	size_t nl = note ? strlen(note) : 0;
	struct mt_buf *b = &p->blk;

	if (t > p->last)
		p->last = t;

	block_begin(b, 6);
	put32(b, id);
	put32(b, (uint32_t)(ts >> 32));
	put32(b, (uint32_t)ts);
	put32(b, (uint32_t)caplen);
	put32(b, (uint32_t)origlen);
	mt_buf_append(b, data, caplen);
	pad4(b);
	put16(b, 2); /* epb_flags */
	put16(b, 4);
	put32(b, dir);
	if (nl)
		option(b, 1, note, nl < 65535 ? nl : 65532); /* opt_comment */
	block_end(p, f, 1);
}

/* ---- IPv4 and TCP ---- */

static uint32_t sum16(uint32_t s, const unsigned char *v, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		s += (uint32_t)(v[i] << 8 | v[i + 1]);
	if (n % 2)
		s += (uint32_t)v[n - 1] << 8;
	return s;
}

static uint16_t fold(uint32_t s)
{
	while (s >> 16)
		s = (s & 0xFFFF) + (s >> 16);
	return (uint16_t)~s;
}

static void be16(unsigned char *at, uint16_t v)
{
	at[0] = (unsigned char)(v >> 8);
	at[1] = (unsigned char)v;
}

static void be32(unsigned char *at, uint32_t v)
{
	be16(at, (uint16_t)(v >> 16));
	be16(at + 2, (uint16_t)v);
}

/*
 * One TCP segment of c, from the server or the client, with flags and n
 * bytes of data, at t: an IPv4 packet with both checksums right.
 */
static void segment(struct pcn *p, FILE *f, struct tconn *c, int from_server, unsigned flags,
		    const void *data, size_t n, int64_t t, const char *note)
{
	unsigned char h[40] = {0};
	uint32_t src = from_server ? p->sip : c->cip, dst = from_server ? c->cip : p->sip;
	uint16_t sp = from_server ? p->sport : c->cport, dp = from_server ? c->cport : p->sport;
	uint32_t s;

	h[0] = 0x45;
	be16(h + 2, (uint16_t)(40 + n));
	be16(h + 4, p->ip_id++);
	be16(h + 6, 0x4000); /* don't fragment */
	h[8] = 64;
	h[9] = 6;
	be32(h + 12, src);
	be32(h + 16, dst);
	be16(h + 10, fold(sum16(0, h, 20)));
	be16(h + 20, sp);
	be16(h + 22, dp);
	be32(h + 24, c->nxt[from_server]);
	be32(h + 28, flags & TCP_ACK ? c->nxt[!from_server] : 0);
	h[32] = 5 << 4;
	h[33] = (unsigned char)flags;
	be16(h + 34, 65535);
	/* The checksum over the pseudo-header (addresses, protocol, length) too. */
	s = sum16(0, h + 12, 8) + 6 + (uint32_t)(20 + n);
	s = sum16(s, h + 20, 20);
	s = sum16(s, data, n);
	be16(h + 36, fold(s));
	mt_buf_reset(&p->pkt);
	mt_buf_append(&p->pkt, h, 40);
	mt_buf_append(&p->pkt, data, n);
	write_epb(p, f, IF_TCP, t, p->pkt.data, p->pkt.len, p->pkt.len,
		  from_server ? EPB_OUTBOUND : EPB_INBOUND, note);
	c->nxt[from_server] += (uint32_t)n + (flags & (TCP_SYN | TCP_FIN) ? 1 : 0);
	if (t > c->last)
		c->last = t;
}

/* n bytes from one side at t, in segments of at most SEG_MAX. */
static void tcp_send(struct pcn *p, FILE *f, struct tconn *c, int from_server, const void *data, size_t n,
		     int64_t t, const char *note)
{
	const char *v = data;

	while (n) {
		size_t k = n < SEG_MAX ? n : SEG_MAX;
		segment(p, f, c, from_server, TCP_ACK | (k == n ? TCP_PSH : 0), v, k, t, note);
		v += k;
		n -= k;
	}
}

/* An initial sequence number for a side of a connection: the same in every export. */
static uint32_t isn(int64_t session, int64_t conn, unsigned k, int side)
{
	uint64_t z = (uint64_t)session * 0x9E3779B97F4A7C15u;

	z ^= (uint64_t)conn * 0xC2B2AE3D27D4EB4Fu ^ ((uint64_t)k << 1 | (uint64_t)side);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u; /* (splitmix64's finish: bits well mixed) */
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
	return (uint32_t)(z ^ (z >> 31));
}

static int port_used(const struct pcn *p, uint16_t port)
{
	return p->used[port / 8] >> (port % 8) & 1;
}

/*
 * A client port not given yet in the file: want when it is free, else the
 * next of 49152-65535, then 1024-49151. When all are given, they are given
 * again from a client address one higher.
 */
static uint16_t new_port(struct pcn *p, uint16_t want)
{
	if (want && want != p->sport && !port_used(p, want)) {
		p->used[want / 8] |= (unsigned char)(1u << (want % 8));
		return want;
	}
	for (;;) {
		for (; p->pnext < 64512; p->pnext++) {
			uint16_t q = (uint16_t)(1024 + (PORTS_FROM - 1024 + p->pnext) % 64512);
			if (q != p->sport && !port_used(p, q)) {
				p->used[q / 8] |= (unsigned char)(1u << (q % 8));
				p->pnext++;
				return q;
			}
		}
		memset(p->used, 0, sizeof(p->used));
		p->pnext = 0;
		p->gen++;
	}
}

/* The handshake of c, at t: a new TCP connection. */
static void tcp_open(struct pcn *p, FILE *f, struct tconn *c, int64_t t)
{
	char note[96];

	if (c->opened++ || c->num != p->conns[0].num || !p->cport0)
		c->cport = new_port(p, 0);
	else
		c->cport = new_port(p, p->cport0);
	c->cip = p->cip + p->gen;
	c->nxt[0] = isn(p->sid, c->num, c->opened, 0);
	c->nxt[1] = isn(p->sid, c->num, c->opened, 1);
	snprintf(note, sizeof(note), "session %lld, connection %lld opened", (long long)p->sid,
		 (long long)c->num);
	segment(p, f, c, 0, TCP_SYN, NULL, 0, t, note);
	segment(p, f, c, 1, TCP_SYN | TCP_ACK, NULL, 0, t, note);
	segment(p, f, c, 0, TCP_ACK, NULL, 0, t, note);
	c->open = 1;
}

/* c's close at t: a FIN each way, the side that closes first, the last ACK. */
static void tcp_close(struct pcn *p, FILE *f, struct tconn *c, int64_t t, int client_first)
{
	char note[96];
	int a = !client_first;

	if (!c->open)
		return;
	snprintf(note, sizeof(note), "session %lld, connection %lld closed", (long long)p->sid,
		 (long long)c->num);
	segment(p, f, c, a, TCP_FIN | TCP_ACK, NULL, 0, t, note);
	segment(p, f, c, !a, TCP_FIN | TCP_ACK, NULL, 0, t, note);
	segment(p, f, c, a, TCP_ACK, NULL, 0, t, note);
	c->open = 0;
}

/* ---- exported PDUs ---- */

/* One message or line as an exported PDU for dissector, at t. */
static void pdu(struct pcn *p, FILE *f, const char *dissector, const void *raw, size_t n, int64_t t,
		uint32_t dir, const char *note)
{
	size_t dl = strlen(dissector), room;

	mt_buf_reset(&p->pkt);
	/* Its tags: EXP_PDU_TAG_DISSECTOR_NAME (12), the name padded to 32 bits as
	 * Wireshark pads it, then the end of the tags (0, length 0). */
	put16be(&p->pkt, 12);
	put16be(&p->pkt, (uint16_t)((dl + 3) / 4 * 4));
	mt_buf_append(&p->pkt, dissector, dl);
	pad4(&p->pkt);
	put32(&p->pkt, 0);
	room = SNAPLEN - p->pkt.len;
	mt_buf_append(&p->pkt, raw, n < room ? n : room);
	write_epb(p, f, IF_PDU, t, p->pkt.data, p->pkt.len, p->pkt.len + (n < room ? 0 : n - room), dir,
		  note);
}

/* ---- what a packet carries, for its comment ---- */

/* s with control bytes made '?': a comment stays one line. */
static void put_clean(struct mt_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mt_buf_putc(b, (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i]);
}

/* "request #8 ping" */
static void note_message(struct mt_buf *b, const struct store_item *it)
{
	if (b->len)
		mt_buf_puts(b, ", ");
	mt_buf_printf(b, "%s #%lld", it->kind, (long long)it->seq);
	if (it->method) {
		mt_buf_putc(b, ' ');
		put_clean(b, it->method, strlen(it->method));
	}
}

/* "session 1, exchange 7: " and what; into p->note, NUL-terminated. */
static const char *note_of(struct pcn *p, int64_t exchange, const char *what, size_t n)
{
	mt_buf_reset(&p->note);
	mt_buf_printf(&p->note, "session %lld", (long long)p->sid);
	if (exchange)
		mt_buf_printf(&p->note, ", exchange %lld", (long long)exchange);
	mt_buf_puts(&p->note, ": ");
	mt_buf_append(&p->note, what, n);
	return p->note.data;
}

/* ---- HTTP heads ---- */

/* Is a Content-Encoding one the tap decodes for storing (gzip, x-gzip or deflate alone)? */
static int decoded_coding(json_t *headers)
{
	size_t i, codings = 0;
	json_t *h;
	int known = 0;

	json_array_foreach(headers, i, h)
	{
		const char *name = json_string_value(json_array_get(h, 0));
		const char *v = json_string_value(json_array_get(h, 1));
		if (!name || !v || strcasecmp(name, "Content-Encoding"))
			continue;
		while (*v) {
			size_t n;
			while (*v == ' ' || *v == '\t' || *v == ',')
				v++;
			for (n = 0; v[n] && v[n] != ','; n++)
				;
			size_t k = n;
			while (k && (v[k - 1] == ' ' || v[k - 1] == '\t'))
				k--;
			if (k && !(k == 8 && !strncasecmp(v, "identity", 8))) {
				codings++;
				known = (k == 4 && !strncasecmp(v, "gzip", 4)) ||
					(k == 6 && !strncasecmp(v, "x-gzip", 6)) ||
					(k == 7 && !strncasecmp(v, "deflate", 7));
			}
			v += n;
		}
	}
	return codings == 1 && known;
}

/* A Content-Length value as a number; -1 when it is not one. */
static long long length_of(const char *v)
{
	size_t n = strlen(v);

	return n && n < 18 && strspn(v, "0123456789") == n ? strtoll(v, NULL, 10) : -1;
}

/* A header's name or value, with the bytes that would end its line made spaces. */
static void put_field(struct mt_buf *b, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mt_buf_putc(b, s[i] == '\r' || s[i] == '\n' || !s[i] ? ' ' : s[i]);
}

/*
 * The header fields stored (a JSON array of [name, value]) as lines, and the
 * blank line, into b; what they say into fl. The first Content-Length gets
 * its value when the head is written (fl->cl_at), since redaction or a body
 * not stored may change the length; a Content-Encoding whose body the tap
 * stored decoded is left out, since the body written is that one.
 */
static void head_fields(struct mt_buf *b, const char *json, struct fields *fl)
{
	json_t *a = json ? json_loads(json, JSON_DECODE_ANY, NULL) : NULL;
	int decoded = json_is_array(a) && decoded_coding(a);
	size_t i;
	json_t *h;

	memset(fl, 0, sizeof(*fl));
	fl->cl_at = SIZE_MAX;
	fl->cl_n = -1;
	if (json_is_array(a)) {
		json_array_foreach(a, i, h)
		{
			const char *name = json_string_value(json_array_get(h, 0));
			json_t *jv = json_array_get(h, 1);
			const char *v = json_string_value(jv);
			if (!name || !v)
				continue;
			if (!strcasecmp(name, "Content-Length")) {
				if (fl->cl_at != SIZE_MAX)
					continue; /* (one is enough: two would not frame) */
				snprintf(fl->cl, sizeof(fl->cl), "%s", v);
				fl->cl_n = length_of(v);
				put_field(b, name, strlen(name));
				mt_buf_puts(b, ": ");
				fl->cl_at = b->len;
				mt_buf_puts(b, "\r\n");
				continue;
			}
			if (decoded && !strcasecmp(name, "Content-Encoding"))
				continue;
			if (!strcasecmp(name, "Transfer-Encoding"))
				fl->chunked |= mt_hdr_has_token(v, "chunked");
			if (!strcasecmp(name, "Connection") && mt_hdr_has_token(v, "close"))
				fl->close = 1;
			put_field(b, name, strlen(name));
			mt_buf_puts(b, ": ");
			put_field(b, v, json_string_length(jv));
			mt_buf_puts(b, "\r\n");
		}
	}
	mt_buf_puts(b, "\r\n");
	json_decref(a);
}

/* head into out, its Content-Length saying len (a stored value when len is NULL). */
static void head_out(struct mt_buf *out, const struct mt_buf *head, const struct fields *fl,
		     const size_t *len)
{
	mt_buf_reset(out);
	if (fl->cl_at == SIZE_MAX) {
		mt_buf_append(out, head->data, head->len);
		return;
	}
	mt_buf_append(out, head->data, fl->cl_at);
	if (len)
		mt_buf_printf(out, "%zu", *len);
	else
		put_field(out, fl->cl, strlen(fl->cl));
	mt_buf_append(out, head->data + fl->cl_at, head->len - fl->cl_at);
}

/*
 * A body that the head stored does not frame (no Content-Length, not
 * chunked) gets a Content-Length, last of the fields: else it would be lost.
 */
static void add_length(struct mt_buf *head, struct fields *fl, enum frame *fr)
{
	head->len -= 2; /* (the blank line) */
	mt_buf_puts(head, "Content-Length: ");
	fl->cl_at = head->len;
	mt_buf_puts(head, "\r\n\r\n");
	*fr = FR_LENGTH;
}

/* A request target or method, with spaces and control bytes %-encoded: one line. */
static void put_token(struct mt_buf *b, const char *s)
{
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch <= 0x20 || ch == 0x7f)
			mt_buf_printf(b, "%%%02X", ch);
		else
			mt_buf_putc(b, (char)ch);
	}
}

static const char *reason(int status)
{
	static const struct {
		int code;
		const char *text;
	} r[] = {
		{200, "OK"},
		{201, "Created"},
		{202, "Accepted"},
		{204, "No Content"},
		{301, "Moved Permanently"},
		{302, "Found"},
		{304, "Not Modified"},
		{307, "Temporary Redirect"},
		{400, "Bad Request"},
		{401, "Unauthorized"},
		{403, "Forbidden"},
		{404, "Not Found"},
		{405, "Method Not Allowed"},
		{406, "Not Acceptable"},
		{409, "Conflict"},
		{413, "Content Too Large"},
		{415, "Unsupported Media Type"},
		{429, "Too Many Requests"},
		{500, "Internal Server Error"},
		{502, "Bad Gateway"},
		{503, "Service Unavailable"},
		{504, "Gateway Timeout"},
	};

	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		if (r[i].code == status)
			return r[i].text;
	return "";
}

/* ---- the session's connections ---- */

static void key64(int64_t v, unsigned char k[8])
{
	memcpy(k, &v, 8);
}

static struct tconn *conn_at(struct pcn *p, const struct mt_map *m, int64_t key)
{
	unsigned char k[8];
	int64_t i;

	key64(key, k);
	return mt_map_get(m, k, 8, &i) ? &p->conns[i] : NULL;
}

/* The connection numbered num, made when new. */
static struct tconn *conn_get(struct pcn *p, int64_t num)
{
	struct tconn *c = conn_at(p, &p->by_conn, num);
	unsigned char k[8];

	if (c)
		return c;
	if (p->nconns == p->capconns) {
		p->capconns = p->capconns ? 2 * p->capconns : 8;
		p->conns = mt_realloc(p->conns, p->capconns * sizeof(*p->conns));
	}
	c = &p->conns[p->nconns];
	memset(c, 0, sizeof(*c));
	c->num = num;
	key64(num, k);
	(void)mt_map_put(&p->by_conn, k, 8, (int64_t)p->nconns++);
	return c;
}

static void busy_add(struct pcn *p, struct tconn *c)
{
	unsigned char k[8];

	if (p->nbusy == p->capbusy) {
		p->capbusy = p->capbusy ? 2 * p->capbusy : 8;
		p->busy = mt_realloc(p->busy, p->capbusy * sizeof(*p->busy));
	}
	p->busy[p->nbusy++] = (size_t)(c - p->conns);
	key64(c->x->seq, k);
	(void)mt_map_put(&p->by_exch, k, 8, c - p->conns);
}

/* c's exchange is done: it holds nothing more. */
static void busy_drop(struct pcn *p, struct tconn *c)
{
	unsigned char k[8];
	int64_t v;
	size_t i = (size_t)(c - p->conns);

	for (size_t j = 0; j < p->nbusy; j++)
		if (p->busy[j] == i) {
			p->busy[j] = p->busy[--p->nbusy];
			break;
		}
	key64(c->x->seq, k);
	(void)mt_map_take(&p->by_exch, k, 8, &v);
	mt_buf_release(&c->x->req);
	mt_buf_release(&c->x->resp);
	mt_buf_release(&c->x->body);
	mt_buf_release(&c->x->note);
	mt_buf_release(&c->x->what);
	free(c->x);
	c->x = NULL;
}

/* ---- an exchange's bytes ---- */

/* The request, its body (n bytes, carrying what msg says, or NULL), at its time. */
static void req_write(struct pcn *p, FILE *f, struct tconn *c, const void *body, size_t n, const char *msg)
{
	struct hx *x = c->x;
	struct mt_buf *o = &p->seg;

	head_out(o, &x->req, &x->rqf, x->req_fr == FR_LENGTH ? &n : NULL);
	if (x->req_fr == FR_CHUNKED) {
		if (n)
			mt_buf_printf(o, "%zx\r\n", n);
		mt_buf_append(o, body, n);
		mt_buf_puts(o, n ? "\r\n0\r\n\r\n" : "0\r\n\r\n");
	} else if (x->req_fr == FR_LENGTH) {
		mt_buf_append(o, body, n);
	}
	mt_buf_reset(&p->tmp);
	mt_buf_append(&p->tmp, x->what.data, x->what.len);
	if (msg)
		mt_buf_printf(&p->tmp, ", %s", msg);
	tcp_send(p, f, c, 0, o->data, o->len, x->t, note_of(p, x->seq, p->tmp.data, p->tmp.len));
	x->req_wait = 0;
}

/* n bytes of the response body at t, framed as its head says. */
static void body_write(struct pcn *p, FILE *f, struct tconn *c, const void *v, size_t n, int64_t t,
		       const char *note)
{
	struct mt_buf *o = &p->seg;

	if (!n)
		return;
	mt_buf_reset(o);
	if (c->x->fr == FR_CHUNKED)
		mt_buf_printf(o, "%zx\r\n", n);
	mt_buf_append(o, v, n);
	if (c->x->fr == FR_CHUNKED)
		mt_buf_puts(o, "\r\n");
	tcp_send(p, f, c, 1, o->data, o->len, t, note);
}

/* The response's head at its time, then the body it held (a held one: all of it). */
static void head_write(struct pcn *p, FILE *f, struct tconn *c)
{
	struct hx *x = c->x;
	size_t n = x->body.len;
	char what[64];

	if (x->req_wait)
		req_write(p, f, c, NULL, 0, NULL); /* (its body never came) */
	head_out(&p->seg, &x->resp, &x->rsf, x->fr == FR_LENGTH ? &n : NULL);
	snprintf(what, sizeof(what), "HTTP %d", x->status);
	tcp_send(p, f, c, 1, p->seg.data, p->seg.len, x->first, note_of(p, x->seq, what, strlen(what)));
	x->head = HEAD_SENT;
	if (n) {
		struct mt_buf held = x->body, note = x->note;
		/* (Moved out first: body_write uses p's scratch, not these.) */
		memset(&x->body, 0, sizeof(x->body));
		memset(&x->note, 0, sizeof(x->note));
		if (x->fr == FR_LENGTH)
			tcp_send(p, f, c, 1, held.data, held.len, x->body_t,
				 note_of(p, x->seq, note.data, note.len));
		else
			body_write(p, f, c, held.data, held.len, x->first,
				   note_of(p, x->seq, note.data, note.len));
		mt_buf_release(&held);
		mt_buf_release(&note);
	}
}

/* Bytes of the response body carrying what note says, at t: written, or held. */
static void body_put(struct pcn *p, FILE *f, struct tconn *c, const void *v, size_t n, int64_t t,
		     const char *note, size_t nn)
{
	struct hx *x = c->x;

	if (x->head == HEAD_SENT) {
		body_write(p, f, c, v, n, t, note_of(p, x->seq, note, nn));
		return;
	}
	mt_buf_append(&x->body, v, n);
	if (x->note.len)
		mt_buf_puts(&x->note, ", ");
	mt_buf_append(&x->note, note, nn);
	if (t > x->body_t)
		x->body_t = t;
}

/*
 * c's exchange ended (at its end, or now: forced): what is left of it is
 * written, the chunked body's last chunk, and the connection closed when
 * the exchange says so (no response, a body to the close, an outcome other
 * than complete, Connection: close).
 */
static void x_end(struct pcn *p, FILE *f, struct tconn *c)
{
	struct hx *x = c->x;
	int64_t at = x->end;
	int closes;

	if (x->head == HEAD_TIMED || x->head == HEAD_HELD)
		head_write(p, f, c);
	if (x->req_wait)
		req_write(p, f, c, NULL, 0, NULL);
	if (x->fr == FR_CHUNKED && x->complete && x->head == HEAD_SENT)
		tcp_send(p, f, c, 1, "0\r\n\r\n", 5, at, note_of(p, x->seq, "end of body", 11));
	closes = x->head == HEAD_NONE || x->fr == FR_CLOSE || !x->complete || x->rqf.close || x->rsf.close;
	if (closes)
		tcp_close(p, f, c, at > c->last ? at : c->last, x->client_closes);
	busy_drop(p, c);
}

/*
 * When c's exchange has something to write next by the clock; -1: nothing.
 * A response's head waits for the request it answers, whose body may come
 * after it (a server that answers early): the end writes what is left.
 */
static int64_t due(const struct tconn *c)
{
	if (c->x->head == HEAD_TIMED && !c->x->req_wait)
		return c->x->first;
	return c->x->end;
}

/* Write what is due before upto (ns since the session began), in time order. */
static void flush(struct pcn *p, FILE *f, int64_t upto)
{
	for (;;) {
		struct tconn *next = NULL;
		int64_t when = 0;
		for (size_t i = 0; i < p->nbusy; i++) {
			struct tconn *c = &p->conns[p->busy[i]];
			int64_t w = due(c);
			if (w >= 0 && w < upto && (!next || w < when)) {
				next = c;
				when = w;
			}
		}
		if (!next)
			return;
		if (next->x->head == HEAD_TIMED)
			head_write(p, f, next);
		else
			x_end(p, f, next);
	}
}

/* The legacy endpoint event, as the GET stream's first. */
static void endpoint_event(struct pcn *p, FILE *f, struct tconn *c, const char *endpoint)
{
	mt_buf_reset(&p->tmp);
	mt_buf_puts(&p->tmp, "event: endpoint\ndata: ");
	put_field(&p->tmp, endpoint, strlen(endpoint));
	mt_buf_puts(&p->tmp, "\n\n");
	mt_buf_reset(&p->tmp2);
	mt_buf_puts(&p->tmp2, "endpoint ");
	put_clean(&p->tmp2, endpoint, strlen(endpoint));
	body_put(p, f, c, p->tmp.data, p->tmp.len, c->x->first, p->tmp2.data, p->tmp2.len);
}

static int64_t at_least(int64_t v, int64_t floor)
{
	return v > floor ? v : floor;
}

/* The response's part of a new exchange: its head, how its body is framed. */
static void x_response(struct hx *x, const struct store_exchange_row *r)
{
	int nobody;

	x->status = r->status > 0 ? r->status % 1000 : 0;
	if (!x->status) {
		x->head = HEAD_NONE;
		return;
	}
	mt_buf_printf(&x->resp, "HTTP/1.1 %03d %s\r\n", x->status, reason(x->status));
	head_fields(&x->resp, r->resp_headers_json, &x->rsf);
	nobody = (r->method && !strcmp(r->method, "HEAD")) || x->status < 200 || x->status == 204 ||
		 x->status == 304;
	x->fr = nobody                     ? FR_NONE
		: x->rsf.chunked           ? FR_CHUNKED
		: x->rsf.cl_at != SIZE_MAX ? FR_LENGTH
					   : FR_CLOSE;
	x->head = x->fr == FR_LENGTH ? HEAD_HELD : HEAD_TIMED;
	x->sse = r->resp_type && !strcmp(r->resp_type, "sse");
	x->body_t = x->first;
}

/*
 * A new exchange: its connection (opened when it is not), its request
 * written or waiting for its body, and what its response begins with made
 * ready (endpoint: the legacy endpoint its GET stream begins with, or NULL;
 * a body the row holds).
 */
static void x_begin(struct pcn *p, FILE *f, const struct store_exchange_row *r, const char *endpoint)
{
	struct tconn *c = conn_get(p, r->conn);
	struct hx *x = c->x;
	int64_t t = at_least(r->t_ns, 0);

	if (x) {
		/* The last exchange on it is written to its end first. One that has
		 * not ended (never answered, cut off) ends now, with its connection:
		 * this one comes on a new one. */
		if (x->end < 0) {
			x->end = at_least(t, c->last);
			x->complete = 0;
		}
		x_end(p, f, c);
	}
	if (!c->open)
		tcp_open(p, f, c, t);
	c->x = x = mt_calloc(1, sizeof(*x));
	x->seq = r->seq;
	x->t = t;
	x->first = at_least(r->first_byte_ns, t);
	x->end = r->end_ns >= 0 || r->outcome ? at_least(r->end_ns, x->first) : -1;
	x->complete = r->outcome && !strcmp(r->outcome, "complete");
	x->client_closes = r->outcome && !strcmp(r->outcome, "client-gone");
	put_token(&x->what, r->method && *r->method ? r->method : "GET");
	mt_buf_putc(&x->what, ' ');
	put_token(&x->what, r->target && *r->target ? r->target : "/");
	mt_buf_append(&x->req, x->what.data, x->what.len);
	mt_buf_puts(&x->req, " HTTP/1.1\r\n");
	head_fields(&x->req, r->req_headers_json, &x->rqf);
	x->req_fr = x->rqf.chunked ? FR_CHUNKED : x->rqf.cl_at != SIZE_MAX ? FR_LENGTH : FR_NONE;
	x_response(x, r);
	busy_add(p, c);
	if (r->req_body) {
		char what[48];
		if (x->req_fr == FR_NONE && r->req_body_len)
			add_length(&x->req, &x->rqf, &x->req_fr);
		snprintf(what, sizeof(what), "a body of %zu bytes", r->req_body_len);
		req_write(p, f, c, r->req_body, r->req_body_len, what);
	} else if (x->req_fr == FR_CHUNKED || (x->req_fr == FR_LENGTH && x->rqf.cl_n != 0)) {
		x->req_wait = 1;
	} else {
		req_write(p, f, c, NULL, 0, NULL);
	}
	if (x->head == HEAD_NONE || x->fr == FR_NONE)
		return;
	if (endpoint)
		endpoint_event(p, f, c, endpoint);
	if (r->resp_body) {
		char what[48];
		snprintf(what, sizeof(what), "a body of %zu bytes", r->resp_body_len);
		body_put(p, f, c, r->resp_body, r->resp_body_len, x->first, what, strlen(what));
	}
}

/* An SSE event carrying a message, into b: its id and type when it had them, its data lines. */
static void sse_event(struct mt_buf *b, const struct store_item *it)
{
	const char *v = it->raw, *end = v + it->raw_len;

	mt_buf_reset(b);
	if (it->sse_id) {
		mt_buf_puts(b, "id: ");
		put_field(b, it->sse_id, strlen(it->sse_id));
		mt_buf_putc(b, '\n');
	}
	if (it->sse_event) {
		mt_buf_puts(b, "event: ");
		put_field(b, it->sse_event, strlen(it->sse_event));
		mt_buf_putc(b, '\n');
	}
	for (;;) {
		const char *nl = memchr(v, '\n', (size_t)(end - v));
		const char *e = nl ? nl : end;
		mt_buf_puts(b, "data: ");
		for (; v < e; v++)
			mt_buf_putc(b, *v == '\r' ? ' ' : *v); /* (a CR would end the line) */
		mt_buf_putc(b, '\n');
		if (!nl)
			break;
		v = nl + 1;
	}
	mt_buf_putc(b, '\n');
}

/*
 * A message in the bytes of its exchange in flight: 0; or -1 when there it
 * cannot be (no such exchange in flight, a second request body, a response
 * that has no body), to be written as a PDU.
 */
static int http_message(struct pcn *p, FILE *f, const struct store_item *it)
{
	struct tconn *c = it->exchange ? conn_at(p, &p->by_exch, it->exchange) : NULL;
	struct hx *x;

	if (!c)
		return -1;
	x = c->x;
	mt_buf_reset(&p->tmp2);
	note_message(&p->tmp2, it);
	if (!strcmp(it->dir, "c2s")) {
		if (!x->req_wait)
			return -1;
		req_write(p, f, c, it->raw, it->raw_len, p->tmp2.data);
		return 0;
	}
	if (x->head == HEAD_NONE || x->fr == FR_NONE)
		return -1;
	if (x->head == HEAD_TIMED)
		head_write(p, f, c);
	else if (x->req_wait)
		req_write(p, f, c, NULL, 0, NULL);
	if (x->sse) {
		sse_event(&p->tmp, it);
		body_put(p, f, c, p->tmp.data, p->tmp.len, at_least(it->t_ns, 0), p->tmp2.data, p->tmp2.len);
	} else {
		body_put(p, f, c, it->raw, it->raw_len, at_least(it->t_ns, 0), p->tmp2.data, p->tmp2.len);
	}
	return 0;
}

/* A message as an exported PDU for the json dissector. */
static void message_pdu(struct pcn *p, FILE *f, const struct store_item *it)
{
	mt_buf_reset(&p->tmp2);
	note_message(&p->tmp2, it);
	pdu(p, f, "json", it->raw, it->raw_len, it->t_ns, strcmp(it->dir, "c2s") ? EPB_OUTBOUND : EPB_INBOUND,
	    note_of(p, it->exchange, p->tmp2.data, p->tmp2.len));
}

/* ---- the session's addresses ---- */

/* "A.B.C.D" (n bytes) as an address: 1, or 0 when it is not one. */
static int ipv4(const char *s, size_t n, uint32_t *out)
{
	char b[16];
	struct in_addr a;

	if (n >= sizeof(b))
		return 0;
	memcpy(b, s, n);
	b[n] = '\0';
	if (inet_pton(AF_INET, b, &a) != 1)
		return 0;
	*out = ntohl(a.s_addr);
	return 1;
}

static uint16_t port_of(const char *s)
{
	char *e;
	long v = strtol(s, &e, 10);

	return e != s && !*e && v > 0 && v < 65536 ? (uint16_t)v : 0;
}

/* The client's "ADDR:PORT", when it is IPv4. */
static void client_addr(struct pcn *p, const char *s)
{
	const char *colon = s ? strrchr(s, ':') : NULL;

	if (colon && ipv4(s, (size_t)(colon - s), &p->cip))
		p->cport0 = port_of(colon + 1);
}

/* The upstream URL's host, when it is IPv4, and port (80 unless it names one). */
static void server_addr(struct pcn *p, const char *url)
{
	const char *h = url ? strstr(url, "://") : NULL;
	const char *ps;
	size_t n;
	char port[8];

	if (!h)
		return;
	h += 3;
	if (*h == '[') /* (an IPv6 address: loopback stands for it) */
		n = strcspn(h, "]") + (h[strcspn(h, "]")] ? 1 : 0);
	else if (!ipv4(h, n = strcspn(h, ":/?#"), &p->sip))
		p->sip = LOOPBACK;
	if (h[n] != ':')
		return;
	ps = h + n + 1;
	n = strcspn(ps, "/?#");
	if (n < sizeof(port)) {
		memcpy(port, ps, n);
		port[n] = '\0';
		if (port_of(port))
			p->sport = port_of(port);
	}
}

/* ---- the format ---- */

static int failed(struct ex_sink *x)
{
	struct pcn *p = x->priv;

	if (!p->ioerr)
		return 0;
	return mt_err_set(&x->err, "%s", strerror(p->ioerr));
}

/* What the session held, let go. */
static void session_reset(struct pcn *p)
{
	while (p->nbusy)
		busy_drop(p, &p->conns[p->busy[0]]);
	free(p->conns);
	p->conns = NULL;
	p->nconns = p->capconns = 0;
	mt_map_release(&p->by_conn);
	mt_map_release(&p->by_exch);
	mt_map_init(&p->by_conn, 0);
	mt_map_init(&p->by_exch, 0);
}

static int pcapng_begin(struct ex_sink *x)
{
	struct pcn *p = calloc(1, sizeof(*p));

	if (!p)
		return mt_err_set(&x->err, "out of memory");
	x->priv = p;
	for (int i = 0; i < IF_N; i++)
		p->iface[i] = -1;
	mt_map_init(&p->by_conn, 0);
	mt_map_init(&p->by_exch, 0);
	write_shb(p, x->out);
	return failed(x);
}

static int pcapng_session(struct ex_sink *x)
{
	struct pcn *p = x->priv;
	const struct store_session_row *s = x->session;

	p->sid = s->id;
	p->last = 0;
	p->t0 = s->started_wall > 0 ? (uint64_t)s->started_wall * 1000 : 0;
	p->cip = p->sip = LOOPBACK;
	p->cport0 = 0;
	p->sport = 80;
	client_addr(p, s->client_addr);
	server_addr(p, s->upstream);
	p->legacy = s->transport && !strcmp(s->transport, "sse") && s->http_session_id;
	return 0;
}

/* The legacy endpoint a new exchange's stream begins with, or NULL. */
static const char *endpoint_of(struct ex_sink *x, const struct store_exchange_row *r)
{
	struct pcn *p = x->priv;
	const char *ep = x->session->http_session_id;

	if (!p->legacy || !r->method || strcmp(r->method, "GET") || !r->resp_type ||
	    strcmp(r->resp_type, "sse"))
		return NULL;
	p->legacy = 0; /* (the first GET stream's) */
	/* The file keeps it as the endpoint's target: redacted as targets are. */
	return ex_redact_target(x, ep, &p->ep);
}

static int pcapng_item(struct ex_sink *x, const struct store_item *it)
{
	struct pcn *p = x->priv;
	FILE *f = x->out;
	char what[48];

	switch (it->type) {
	case STORE_ITEM_EXCHANGE:
		flush(p, f, it->x->t_ns);
		x_begin(p, f, it->x, endpoint_of(x, it->x));
		break;
	case STORE_ITEM_MESSAGE:
		flush(p, f, it->t_ns);
		if (http_message(p, f, it))
			message_pdu(p, f, it);
		break;
	case STORE_ITEM_STDERR:
		flush(p, f, it->t_ns);
		snprintf(what, sizeof(what), "stderr #%lld", (long long)it->seq);
		pdu(p, f, "data-text-lines", it->raw, it->raw_len, it->t_ns, EPB_OUTBOUND,
		    note_of(p, 0, what, strlen(what)));
		break;
	default: break; /* a gap: what was not stored has no bytes to write */
	}
	return failed(x);
}

/*
 * The session's end: what is due is written; an exchange that never ended
 * has what came of it written, and its connection stays open (it was, when
 * the recording ended); every other connection closes, at the session's last
 * packet (a client closes what it keeps alive when it is done; and so the
 * session's packets stay in time order).
 */
static int pcapng_session_end(struct ex_sink *x)
{
	struct pcn *p = x->priv;
	FILE *f = x->out;

	flush(p, f, INT64_MAX);
	for (size_t i = 0; i < p->nbusy; i++) {
		struct tconn *c = &p->conns[p->busy[i]];
		if (c->x->head == HEAD_TIMED || c->x->head == HEAD_HELD)
			head_write(p, f, c);
		else if (c->x->req_wait)
			req_write(p, f, c, NULL, 0, NULL);
	}
	for (size_t i = 0; i < p->nconns; i++)
		if (!p->conns[i].x)
			tcp_close(p, f, &p->conns[i], p->last, 1);
	session_reset(p);
	return failed(x);
}

static void pcapng_release(struct ex_sink *x)
{
	struct pcn *p = x->priv;

	if (!p)
		return;
	session_reset(p);
	mt_map_release(&p->by_conn);
	mt_map_release(&p->by_exch);
	free(p->busy);
	mt_buf_release(&p->blk);
	mt_buf_release(&p->pkt);
	mt_buf_release(&p->seg);
	mt_buf_release(&p->tmp);
	mt_buf_release(&p->tmp2);
	mt_buf_release(&p->note);
	mt_buf_release(&p->ep);
	free(p);
	x->priv = NULL;
}

const struct ex_format ex_pcapng = {
	.name = "pcapng",
	.what = "packets for Wireshark and tshark: HTTP as TCP streams, stdio as JSON PDUs",
	.flags = STORE_ITEMS_PAIRED | STORE_ITEMS_EXCHANGES,
	.binary = 1,
	.begin = pcapng_begin,
	.session = pcapng_session,
	.item = pcapng_item,
	.session_end = pcapng_session_end,
	.release = pcapng_release,
};
