# mcptap - record/replay traffic tap and analyzer for MCP.
#
#   make            build ./mcptap and the test peers
#   make test       install what is missing, build, run every unit and end-to-end test
#                   (MCPTAP_TEST_JOBS end-to-end scripts at once, default 4)
#   make check      the same tests under AddressSanitizer and UndefinedBehaviorSanitizer
#   make demo       install what is missing, build, record a bundled session and show it
#   make bench      the benchmarks (figures as ratios measured in one run)
#   make fuzz       each fuzz target for FUZZ_SECONDS (libFuzzer, clang)
#   make stress     many taps flooding one file, with kills, readers and a foreign
#                   lock (tests/stress.sh; STRESS_ARGS to change its sizes)
#   make install    PREFIX (/usr/local) and DESTDIR as usual
#   make man-rules  write mcptap-rules.7, the rule catalogue, from the rule table
#
# Libraries come from pkg-config; nothing is vendored. Debian's libhttp-parser-dev
# (pcap import's HTTP/1.1 parser) ships no pkg-config file: it is linked by name.

VERSION = 0.1.0
PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
FUZZ_SECONDS ?= 20

PKGS = jansson sqlite3 libevent libevent_openssl openssl zlib libcurl libpcap
# Deferred (=) so that `make test` can install pkg-config and the -dev packages first.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS = $(shell pkg-config --libs $(PKGS))
CMOCKA_LIBS = $(shell pkg-config --libs cmocka)

WARN = -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
       -Wformat=2 -Wno-format-nonliteral -Wvla
BASE_CFLAGS = -std=gnu11 $(WARN) -g -D_GNU_SOURCE -DMCPTAP_VERSION='"$(VERSION)"' \
	      -I. -Ibuild/gen $(PKG_CFLAGS)
OPT ?= -O2
SAN_FLAGS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer

ifeq ($(SAN),1)
B = build/san
EXTRA = $(SAN_FLAGS) -O1
else
B = build/rel
EXTRA = $(OPT)
endif
ALL_CFLAGS = $(BASE_CFLAGS) $(EXTRA) $(CFLAGS)
ALL_LDFLAGS = $(EXTRA) $(LDFLAGS)
LIBS = $(PKG_LIBS) -lhttp_parser -lpthread

# The library: the data model, the two halves, and the command-line kit (cli.c);
# mcptap.c, the dispatcher, is the binary's own.
LIB_SRC = $(wildcard schema/*.c) $(wildcard tap/*.c tap/*/*.c) $(wildcard analyze/*.c analyze/*/*.c) \
	  cli.c
LIB_OBJ = $(LIB_SRC:%.c=$(B)/%.o) $(B)/gen/schema_sql.o
UNIT_SRC = $(wildcard tests/unit/test-*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
PEER_SRC = $(wildcard tests/peers/*.c)
PEER_BIN = $(PEER_SRC:%.c=%)
BENCH_SRC = $(filter-out tests/bench/store-floor.c,$(wildcard tests/bench/*.c))
BENCH_BIN = $(BENCH_SRC:%.c=%) tests/bench/store-floor
FUZZ_SRC = $(wildcard tests/fuzz/fuzz-*.c)
FUZZ_BIN = $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)

.PHONY: all test test-run check check-run demo demo-run bench bench-run fuzz fuzz-run stress \
	install man-rules clean deps unit e2e

ifeq ($(SAN),1)
all: $(B)/mcptap $(UNIT_BIN)
else
all: mcptap $(PEER_BIN) $(BENCH_BIN)
endif

mcptap: $(B)/mcptap
	cp $< $@

$(B)/mcptap: $(B)/mcptap.o $(B)/libmcptap.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(B)/libmcptap.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(B)/%.o: %.c $(wildcard *.h */*.h */*/*.h) build/gen/schema_sql.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The schema is defined once, in schema/mcptap.sql; the binary embeds it as a string.
build/gen/schema_sql.c: schema/mcptap.sql
	@mkdir -p $(dir $@)
	{ echo '#include "schema_sql.h"'; echo 'const char mcptap_schema_sql[] ='; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $<; echo ';'; } > $@
build/gen/schema_sql.h:
	@mkdir -p $(dir $@)
	echo 'extern const char mcptap_schema_sql[];' > $@
$(B)/gen/schema_sql.o: build/gen/schema_sql.c build/gen/schema_sql.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

$(B)/tests/test-%: tests/unit/test-%.c tests/unit/unit.h $(B)/libmcptap.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(B)/libmcptap.a $(LIBS) $(CMOCKA_LIBS)

tests/peers/fixture-load: tests/peers/fixture-load.c $(B)/libmcptap.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

tests/peers/%: tests/peers/%.c
	$(CC) $(BASE_CFLAGS) $(OPT) $(CFLAGS) -o $@ $< $(LIBS)

tests/bench/store-floor: tests/bench/store-floor.c $(B)/libmcptap.a
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LIBS)

tests/bench/%: tests/bench/%.c
	$(CC) $(BASE_CFLAGS) $(OPT) $(CFLAGS) -o $@ $< $(LIBS)

# The header-only helpers the peers share (the pattern rules compile $< alone).
tests/peers/mcp-client tests/bench/load-client tests/bench/byte-relay: tests/peers/spawn.h
tests/bench/echo-server tests/bench/load-client tests/bench/http-echo tests/bench/http-load: \
	tests/bench/jscan.h
tests/bench/load-client tests/bench/http-load: tests/bench/clock.h
tests/peers/pcap-gen $(B)/tests/test-tcpflow $(B)/tests/test-pcapimport tests/bench/pcap-mcp-gen: \
	tests/peers/pktcraft.h
# test-capture reads the captures pcap-gen writes.
$(B)/tests/test-capture: tests/peers/pcap-gen tests/peers/pktcraft.h

deps:
	@tests/setup.sh test

test: deps
	@$(MAKE) --no-print-directory test-run

test-run: all $(UNIT_BIN)
	@tests/run-all.sh $(B)

check: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory SAN=1 check-run

check-run: all
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  MCPTAP=$(CURDIR)/$(B)/mcptap tests/run-all.sh $(B)

demo: 
	@tests/setup.sh build
	@$(MAKE) --no-print-directory all
	@tests/demo.sh

bench:
	@tests/setup.sh build bench
	@$(MAKE) --no-print-directory all
	@tests/bench/bench.sh

# The suite runs it briefly (t0158); this is the issue's size: 8 taps x 40,000
# messages of 200 B and 2 KB, 3 killed, 2 readers, a foreign lock of 2 s.
STRESS_ARGS ?= -n 8 -m 40000 -s 200,2048 -k 3 -K 3000 -r 2 -l 2000
stress:
	@tests/setup.sh build
	@$(MAKE) --no-print-directory all
	@tests/stress.sh $(STRESS_ARGS)

fuzz:
	@tests/setup.sh build fuzz
	@$(MAKE) --no-print-directory fuzz-run

fuzz-run: $(FUZZ_BIN)
	@tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_BIN)

build/fuzz/fuzz-%: tests/fuzz/fuzz-%.c $(LIB_SRC) build/gen/schema_sql.c build/gen/schema_sql.h
	@mkdir -p $(dir $@)
	clang $(BASE_CFLAGS) -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -o $@ $< $(LIB_SRC) \
	  build/gen/schema_sql.c $(LIBS)

install: mcptap
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man7
	install -m 0755 mcptap $(DESTDIR)$(PREFIX)/bin/mcptap
	install -m 0644 mcptap.1 $(DESTDIR)$(PREFIX)/share/man/man1/mcptap.1
	install -m 0644 mcptap-rules.7 $(DESTDIR)$(PREFIX)/share/man/man7/mcptap-rules.7

# The rule catalogue is generated from the rule table and committed;
# t0300-rules.sh fails when it is out of date.
man-rules: mcptap
	sh tests/man-rules.sh ./mcptap

clean:
	rm -rf build mcptap $(PEER_BIN) $(BENCH_BIN)
