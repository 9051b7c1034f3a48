/*
 * mcptap.c - the command line's entry: look the subcommand up in the table
 * and run it. Each subcommand lives in its own file.
 */
#include <stdio.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cli.h"

extern const struct cmd_entry cmd_record;
extern const struct cmd_entry cmd_sessions;
extern const struct cmd_entry cmd_show;
extern const struct cmd_entry cmd_analyze;
extern const struct cmd_entry cmd_stats;
extern const struct cmd_entry cmd_export;
extern const struct cmd_entry cmd_report;
extern const struct cmd_entry cmd_replay;
extern const struct cmd_entry cmd_diff;
extern const struct cmd_entry cmd_import;
extern const struct cmd_entry cmd_sniff;

static const struct cmd_entry *const commands[] = {
	&cmd_record, &cmd_sessions, &cmd_show, &cmd_analyze, &cmd_stats, &cmd_export,
	&cmd_report, &cmd_replay,   &cmd_diff, &cmd_import,  &cmd_sniff,
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: mcptap [--version] [--help] COMMAND [ARGS]\n\n"
		   "mcptap records, analyzes and replays Model Context Protocol traffic.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-9s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(f, "\n'mcptap COMMAND --help' describes a command; 'man mcptap' all of them.\n");
}

int main(int argc, char **argv)
{
#ifdef __GLIBC__
	/*
	 * Big buffers (a body of megabytes, SQLite's record of it) from their own
	 * mappings, given back when freed. By default glibc raises this threshold
	 * each time such a buffer is freed, so after a burst of big bodies they
	 * come from the arenas of the relay's and the writer's threads and stay
	 * resident: 90 MB after 30 bodies of 15 MiB, 14 MB with the threshold fixed.
	 */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#endif
	if (argc < 2) {
		usage(stderr);
		return EXIT_ERROR;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		if (argc > 2 && strcmp(argv[1], "help") == 0) {
			for (size_t i = 0; i < NCOMMANDS; i++) {
				if (!strcmp(argv[2], commands[i]->name)) {
					cli_help(commands[i], stdout);
					return EXIT_OK;
				}
			}
			fprintf(stderr, "mcptap: '%s' is not a command; see 'mcptap --help'\n", argv[2]);
			return EXIT_ERROR;
		}
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("mcptap %s\n", MCPTAP_VERSION);
		return EXIT_OK;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i]->name))
			return commands[i]->run(argc - 1, argv + 1);
	fprintf(stderr, "mcptap: '%s' is not a command; see 'mcptap --help'\n", argv[1]);
	return EXIT_ERROR;
}
