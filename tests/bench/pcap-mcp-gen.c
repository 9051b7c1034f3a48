/*
 * pcap-mcp-gen - write a big capture of MCP traffic over Streamable HTTP for
 * the import benchmark (section (m) of tests/bench/bench.sh), through
 * libpcap's dump API (pcap_open_dead, pcap_dump_open, pcap_dump).
 *
 * usage: pcap-mcp-gen [-m MB] [-c CALLS] [-k CONCURRENT] OUT
 *        pcap-mcp-gen -o CONNS OUT
 *
 * Sessions follow one another until the file holds MB megabytes (default
 * 200): each is its own TCP connection (handshake, FINs), with an initialize
 * answered in JSON with an Mcp-Session-Id, notifications/initialized
 * answered 202, CALLS tools/call requests (default 40) answered alternately
 * by a JSON body and by a chunked SSE stream of three progress notifications
 * and the result, and a DELETE. CONCURRENT sessions (default 16) run at once,
 * their exchanges interleaved, so that many connections are open together.
 * Texts are English words. Segments are at most 1448 bytes, Ethernet frames,
 * IPv4; timestamps start at
 * 1700000000 s and go 20 µs a packet. Prints "sessions=N messages=M bytes=B".
 *
 * With -o, CONNS connections follow one another instead, none of them closed
 * (for pcap import's --memory): each (numbered from 1) a handshake, then a
 * tools/call (Mcp-Session-Id "open-1": one session for all)
 * whose answer never ends: odd connections an SSE stream (one whole event,
 * without an id, then half of the next), even ones a JSON body of which half
 * is sent, followed by a second request whose body stops half-way. Requests
 * carry the connection's number as their progressToken, and that number
 * modulo 64 as their id (so that the requests left unanswered are not too
 * many for the writer's pairing). Prints "connections=N messages=M bytes=B"
 * (M: the requests and whole events).
 */
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/peers/pktcraft.h"

#define MSS 1448

struct sess {
	int active;
	uint32_t caddr; /* the client's address (10.x.y.z) */
	uint16_t cport;
	uint32_t cseq, sseq;
	int step; /* 0 handshake, 1 initialize, 2 initialized, 3.. calls, then DELETE, FIN */
	int calls;
	char sid[40];
};

static pcap_dumper_t *dumper;
static int64_t now_us = 1700000000LL * 1000000;
static uint64_t bytes_out = 24, messages, sessions;
static char pad[2048];

static void frame(struct sess *s, int from_client, uint8_t flags, const char *p, size_t n)
{
	static uint8_t buf[PK_MAX];
	struct pk_seg g;
	struct pcap_pkthdr h;
	uint32_t srv = 0x0a000001; /* 10.0.0.1 */
	uint32_t a = from_client ? s->caddr : srv, b = from_client ? srv : s->caddr;

	memset(&g, 0, sizeof(g));
	pk_put32(g.src, a);
	pk_put32(g.dst, b);
	g.sport = from_client ? s->cport : 3001;
	g.dport = from_client ? 3001 : s->cport;
	g.seq = from_client ? s->cseq : s->sseq;
	g.ack = from_client ? s->sseq : s->cseq;
	g.flags = flags;
	g.data = (const uint8_t *)p;
	g.len = n;
	h.caplen = h.len = (bpf_u_int32)pk_segment(buf, DLT_EN10MB, 0, &g);
	h.ts.tv_sec = now_us / 1000000;
	h.ts.tv_usec = now_us % 1000000;
	now_us += 20;
	pcap_dump((u_char *)dumper, &h, buf);
	bytes_out += 16 + h.caplen;
	*(from_client ? &s->cseq : &s->sseq) += (uint32_t)n + (flags & (PK_SYN | PK_FIN) ? 1 : 0);
}

static void send_all(struct sess *s, int from_client, const char *p, size_t n)
{
	while (n) {
		size_t k = n < MSS ? n : MSS;
		frame(s, from_client, PK_ACK | PK_PSH, p, k);
		p += k;
		n -= k;
	}
}

static char req[8192], resp[16384], body[8192], ev[16384];

static void post(struct sess *s, const char *b)
{
	int n = snprintf(req, sizeof(req),
			 "POST /mcp HTTP/1.1\r\nHost: 10.0.0.1:3001\r\nContent-Type: application/json\r\n"
			 "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
			 "%s%s%sContent-Length: %zu\r\n\r\n%s",
			 s->sid[0] ? "Mcp-Session-Id: " : "", s->sid, s->sid[0] ? "\r\n" : "", strlen(b), b);
	send_all(s, 1, req, (size_t)n);
	messages++;
}

static void json_answer(struct sess *s, const char *b, int with_sid)
{
	int n = snprintf(resp, sizeof(resp),
			 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n%s%s%s"
			 "Content-Length: %zu\r\n\r\n%s",
			 with_sid ? "Mcp-Session-Id: " : "", with_sid ? s->sid : "", with_sid ? "\r\n" : "",
			 strlen(b), b);
	send_all(s, 0, resp, (size_t)n);
	messages++;
}

/* One exchange of session s; 0 when the session is over. */
static int step(struct sess *s)
{
	switch (s->step++) {
	case 0:
		frame(s, 1, PK_SYN, NULL, 0);
		frame(s, 0, PK_SYN | PK_ACK, NULL, 0);
		frame(s, 1, PK_ACK, NULL, 0);
		return 1;
	case 1:
		post(s, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
			"\"protocolVersion\":"
			"\"2025-11-25\",\"capabilities\":{\"sampling\":{},\"elicitation\":{}},\"clientInfo\":"
			"{\"name\":\"bench-client\",\"version\":\"1.0.0\"}}}");
		snprintf(s->sid, sizeof(s->sid), "%08x-%04x-bench", s->caddr, s->cport);
		json_answer(s,
			    "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"protocolVersion\":\"2025-11-25\","
			    "\"capabilities\":{\"tools\":{\"listChanged\":true},\"logging\":{}},"
			    "\"serverInfo\":{\"name\":\"bench-server\",\"version\":\"2.0.0\"}}}",
			    1);
		return 1;
	case 2:
		post(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
		send_all(s, 0, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n", 44);
		return 1;
	default: break;
	}
	if (s->calls < 0) {
		frame(s, 1, PK_FIN | PK_ACK, NULL, 0);
		frame(s, 0, PK_FIN | PK_ACK, NULL, 0);
		return 0;
	}
	int id = s->step;
	if (s->calls == 0) {
		snprintf(req, sizeof(req),
			 "DELETE /mcp HTTP/1.1\r\nHost: 10.0.0.1:3001\r\nMcp-Session-Id: %s\r\n\r\n", s->sid);
		send_all(s, 1, req, strlen(req));
		send_all(s, 0, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 38);
		s->calls = -1;
		return 1;
	}
	s->calls--;
	snprintf(body, sizeof(body),
		 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
		 "\"arguments\":{\"message\":\"%.*s\"},\"_meta\":{\"progressToken\":%d}}}",
		 id, 200 + id % 200, pad, id);
	post(s, body);
	if (id % 2) {
		snprintf(
			body, sizeof(body),
			"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
			"\"%.*s\"}],\"isError\":false}}",
			id, 600 + id % 700, pad);
		json_answer(s, body, 0);
		return 1;
	}
	/* An SSE stream: three progress notifications and the result, one chunk each. */
	int n = snprintf(resp, sizeof(resp),
			 "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
			 "Transfer-Encoding: chunked\r\n\r\n");
	send_all(s, 0, resp, (size_t)n);
	for (int k = 1; k <= 4; k++) {
		int m;
		if (k < 4)
			m = snprintf(
				ev, sizeof(ev),
				"id: %d-%d\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
				"\"notifications/progress\",\"params\":{\"progressToken\":%d,\"progress\":%d,"
				"\"total\":3,\"message\":\"%.*s\"}}\n\n",
				id, k, id, k, 40 + k * 10, pad);
		else
			m = snprintf(
				ev, sizeof(ev),
				"id: %d-4\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":"
				"{\"content\":[{\"type\":\"text\",\"text\":\"%.*s\"}]}}\n\n",
				id, id, 500 + id % 900, pad);
		n = snprintf(resp, sizeof(resp), "%x\r\n%s\r\n", m, ev);
		send_all(s, 0, resp, (size_t)n);
		messages++;
	}
	send_all(s, 0, "0\r\n\r\n", 5);
	return 1;
}

/* Connection n (from 1) of -o, left open. */
static void open_conn(uint32_t n)
{
	struct sess s;
	int k;

	memset(&s, 0, sizeof(s));
	s.caddr = 0x0a010000 + (n >> 14);
	s.cport = (uint16_t)(1024 + (n & 16383));
	s.cseq = 1000 + n;
	s.sseq = 7000000 + n;
	snprintf(s.sid, sizeof(s.sid), "open-1");
	frame(&s, 1, PK_SYN, NULL, 0);
	frame(&s, 0, PK_SYN | PK_ACK, NULL, 0);
	frame(&s, 1, PK_ACK, NULL, 0);
	snprintf(body, sizeof(body),
		 "{\"jsonrpc\":\"2.0\",\"id\":%u,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
		 "\"arguments\":{\"message\":\"%.*s\"},\"_meta\":{\"progressToken\":%u}}}",
		 n % 64, 100, pad, n);
	post(&s, body);
	if (n % 2) {
		k = snprintf(
			ev, sizeof(ev),
			"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
			"\"params\":{\"progressToken\":%u,\"progress\":1,\"message\":\"%.*s\"}}\n\n"
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",",
			n, 100, pad);
		k = snprintf(
			resp, sizeof(resp),
			"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
			"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n",
			k, ev);
		send_all(&s, 0, resp, (size_t)k);
		messages++;
		return;
	}
	k = snprintf(
		resp, sizeof(resp),
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 600\r\n\r\n"
		"{\"jsonrpc\":\"2.0\",\"id\":%u,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"%.*s",
		n % 64, 250, pad);
	send_all(&s, 0, resp, (size_t)k);
	k = snprintf(
		req, sizeof(req),
		"POST /mcp HTTP/1.1\r\nHost: 10.0.0.1:3001\r\nContent-Type: application/json\r\n"
		"Mcp-Session-Id: %s\r\nContent-Length: 500\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":\"x\",%.*s",
		s.sid, 200, pad);
	send_all(&s, 1, req, (size_t)k);
}

int main(int argc, char **argv)
{
	int c, calls = 40, conc = 16;
	unsigned long open_n = 0;
	double mb = 200;
	pcap_t *dead;
	struct sess *ss;
	uint32_t next = 0;

	while ((c = getopt(argc, argv, "m:c:k:o:")) != -1) {
		switch (c) {
		case 'o': open_n = strtoul(optarg, NULL, 10); break;
		case 'm': mb = strtod(optarg, NULL); break;
		case 'c': calls = (int)strtol(optarg, NULL, 10); break;
		case 'k': conc = (int)strtol(optarg, NULL, 10); break;
		default: goto usage;
		}
	}
	if (optind + 1 != argc || mb <= 0 || calls < 1 || calls > 100000 || conc < 1 || conc > 4096 ||
	    open_n > 1000000)
		goto usage;
	{
		/* Text as a tool's answers have it: words. */
		static const char words[] =
			"The quick brown fox jumps over the lazy dog while the server streams "
			"its progress and the client waits for the result of the echo tool. ";
		for (size_t i = 0; i < sizeof(pad); i++)
			pad[i] = words[i % (sizeof(words) - 1)];
	}
	dead = pcap_open_dead(DLT_EN10MB, 262144);
	dumper = pcap_dump_open(dead, argv[optind]);
	if (!dumper) {
		fprintf(stderr, "pcap-mcp-gen: %s\n", pcap_geterr(dead));
		return 1;
	}
	if (open_n) {
		for (uint32_t n = 1; n <= open_n; n++)
			open_conn(n);
		pcap_dump_close(dumper);
		pcap_close(dead);
		printf("connections=%lu messages=%llu bytes=%llu\n", open_n, (unsigned long long)messages,
		       (unsigned long long)bytes_out);
		return 0;
	}
	ss = calloc((size_t)conc, sizeof(*ss));
	for (;;) {
		int live = 0;
		for (int i = 0; i < conc; i++) {
			struct sess *s = &ss[i];
			if (!s->active && bytes_out < (uint64_t)(mb * 1e6)) {
				memset(s, 0, sizeof(*s));
				s->active = 1;
				s->caddr = 0x0a010000 + (next >> 14);
				s->cport = (uint16_t)(1024 + (next & 16383));
				s->cseq = 1000 + next;
				s->sseq = 7000000 + next;
				s->calls = calls;
				next++;
				sessions++;
			}
			if (s->active) {
				live = 1;
				if (!step(s))
					s->active = 0;
			}
		}
		if (!live)
			break;
	}
	pcap_dump_close(dumper);
	pcap_close(dead);
	free(ss);
	printf("sessions=%llu messages=%llu bytes=%llu\n", (unsigned long long)sessions,
	       (unsigned long long)messages, (unsigned long long)bytes_out);
	return 0;
usage:
	fprintf(stderr, "usage: pcap-mcp-gen [-m MB] [-c CALLS] [-k CONCURRENT] OUT\n"
			"       pcap-mcp-gen -o CONNS OUT\n");
	return 2;
}
