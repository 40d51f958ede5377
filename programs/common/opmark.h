/* SPDX-License-Identifier: MIT */
/*
 * Op markers of the project's measured programs (docs/workloads.md,
 * "Program op markers").
 *
 * A program counts its ops (dedup: a fine chunk written, ebizzy: a record
 * search, vips: an image pass) and, at exit, prints its throughput and
 * appends one line to the file named by OVERSUB_OPS_FILE (if set):
 *
 *   program=NAME unit=UNIT ops=N seconds=S
 *
 * With OVERSUB_OP_MARK=1 it also issues, at the end of every op, the marker
 * syscall getcpu(NULL, NULL, (void *)OPMARK_MAGIC): a real syscall (glibc's
 * sched_getcpu() uses the vDSO or rseq, so no library issues it with that
 * third argument), cheap, traceable per thread with
 * syscalls:sys_enter_getcpu filtered on unused == 0x6f70.
 */
#ifndef OPMARK_H
#define OPMARK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define OPMARK_MAGIC 0x6f70UL /* "op" */

static int opmark_on;

static inline void opmark_init(void)
{
	const char *e = getenv("OVERSUB_OP_MARK");

	opmark_on = e && strcmp(e, "1") == 0;
}

/* One op ended in the calling thread. */
static inline void opmark(void)
{
	if (opmark_on)
		syscall(SYS_getcpu, NULL, NULL, (void *)OPMARK_MAGIC);
}

static inline double opmark_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Prints the throughput and appends the ops line to OVERSUB_OPS_FILE. */
static inline int opmark_report(const char *prog, const char *unit,
				uint64_t ops, double seconds)
{
	const char *path = getenv("OVERSUB_OPS_FILE");
	FILE *f;

	printf("%s: %llu %s in %.3f s: %.1f %s/s\n", prog,
	       (unsigned long long)ops, unit, seconds,
	       seconds > 0 ? ops / seconds : 0.0, unit);
	if (!path || !*path)
		return 0;
	f = fopen(path, "a");
	if (!f) {
		fprintf(stderr, "%s: OVERSUB_OPS_FILE %s: cannot open\n", prog,
			path);
		return -1;
	}
	fprintf(f, "program=%s unit=%s ops=%llu seconds=%.6f\n", prog, unit,
		(unsigned long long)ops, seconds);
	return fclose(f) ? -1 : 0;
}

#endif /* OPMARK_H */
