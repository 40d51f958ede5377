// SPDX-License-Identifier: GPL-2.0
/*
 * yield_bench: the benchmark of the sched_yield() throttle RFC (seed 003),
 * written for this project: one process with a profiling timer
 * (ITIMER_PROF, which turns on the process-wide cputimer that every
 * update_curr() then adds to) and N threads, two per CPU, each calling
 * sched_yield() in a loop for a fixed time.
 *
 * usage: yield_bench THREADS SECONDS [noprof]
 *
 * Prints one line of key=value: the yields made by all threads, the
 * process's CPU time and its voluntary/involuntary context switches
 * (getrusage(RUSAGE_SELF)); a yield that reaches schedule() and switches to
 * the other thread of its CPU counts as an involuntary switch. Then one
 * line per thread with its yields.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 1024

static atomic_int stop;
static atomic_int ready;
static unsigned long long counts[MAX_THREADS];
static volatile sig_atomic_t profs;

struct worker {
	int id;
	int cpu;
};

static void on_prof(int sig)
{
	(void)sig;
	profs++;
}

static void *yielder(void *arg)
{
	struct worker *w = arg;
	unsigned long long n = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(w->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	atomic_fetch_add(&ready, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		sched_yield();
		n++;
	}
	counts[w->id] = n;
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker ws[MAX_THREADS];
	pthread_t tids[MAX_THREADS];
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };
	struct timespec d;
	struct rusage ru;
	unsigned long long total = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int prof = argc < 4 || strcmp(argv[3], "noprof") != 0;
	int n, secs, i;

	if (argc < 3) {
		fprintf(stderr, "usage: %s THREADS SECONDS [noprof]\n", argv[0]);
		return 2;
	}
	n = atoi(argv[1]);
	secs = atoi(argv[2]);
	if (n < 1 || n > MAX_THREADS || secs < 1 || secs > 3600 || ncpu < 1) {
		fprintf(stderr, "%s: THREADS 1..%d, SECONDS 1..3600\n", argv[0],
			MAX_THREADS);
		return 2;
	}
	if (prof) {
		signal(SIGPROF, on_prof);
		if (setitimer(ITIMER_PROF, &it, NULL)) {
			perror("setitimer");
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		ws[i].id = i;
		ws[i].cpu = (i / 2) % ncpu;
		if (pthread_create(&tids[i], NULL, yielder, &ws[i])) {
			perror("pthread_create");
			return 1;
		}
	}
	while (atomic_load(&ready) < n)
		usleep(1000);
	d.tv_sec = secs;
	d.tv_nsec = 0;
	while (nanosleep(&d, &d))
		;
	atomic_store(&stop, 1);
	for (i = 0; i < n; i++) {
		pthread_join(tids[i], NULL);
		total += counts[i];
	}
	getrusage(RUSAGE_SELF, &ru);
	printf("threads=%d seconds=%d prof=%d yields=%llu cpu_ns=%llu nvcsw=%ld nivcsw=%ld sigprof=%d\n",
	       n, secs, prof, total,
	       (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) *
			       1000000000ULL +
		       (unsigned long long)(ru.ru_utime.tv_usec +
					    ru.ru_stime.tv_usec) * 1000ULL,
	       ru.ru_nvcsw, ru.ru_nivcsw, (int)profs);
	for (i = 0; i < n; i++)
		printf("thread=%d cpu=%d yields=%llu\n", i, ws[i].cpu, counts[i]);
	return 0;
}
