// SPDX-License-Identifier: MIT
/*
 * ebizzy-like search workload (docs/workloads.md, "ebizzy"): the structure of
 * ebizzy 0.3 (Valerie Henson, Intel) written anew for this project.
 *
 * A set of chunks holds sorted records. Each thread, until the time is up,
 * picks a random chunk, allocates a buffer of the chunk's size (malloc, or
 * mmap with -m; -M forbids glibc's mmap path), copies the chunk into it,
 * looks a random record up (binary search; linear with -z) and frees the
 * buffer. One op = one search. Prints records/s and user/sys time.
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../common/opmark.h"

typedef uint64_t record;

static unsigned int nthreads, nchunks = 10, seconds = 10;
static size_t chunk_bytes = 64 * 1024 * sizeof(record); /* 512 KiB */
static int use_mmap, no_mmap, random_size, linear;
static record **chunks;
static atomic_int running;
static atomic_int go;

static void print_usage(const char *cmd)
{
	fprintf(stderr,
		"usage: %s [-t threads] [-S seconds] [-n chunks] [-s bytes] [-m|-M] [-R] [-z]\n"
		"  -t  threads (default 2 x online CPUs)\n"
		"  -S  run time in seconds (default 10, 1..3600)\n"
		"  -n  chunks (default 10, 1..4096)\n"
		"  -s  chunk size in bytes (default 524288, 8..1 GiB)\n"
		"  -m  allocate the copy with mmap/munmap\n"
		"  -M  never let malloc use mmap (mallopt M_MMAP_MAX 0)\n"
		"  -R  copy and search a random prefix of the chunk\n"
		"  -z  linear instead of binary search\n",
		cmd);
	exit(2);
}

static unsigned long arg(const char *cmd, char opt, const char *s,
			 unsigned long lo, unsigned long hi)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "%s: -%c %s: allowed %lu..%lu\n", cmd, opt, s,
			lo, hi);
		exit(2);
	}
	return v;
}

static void *buf_alloc(size_t n)
{
	void *p;

	if (use_mmap) {
		p = mmap(NULL, n, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			p = NULL;
	} else {
		p = malloc(n);
	}
	if (!p) {
		fprintf(stderr, "ebizzy: out of memory allocating %zu bytes\n",
			n);
		exit(1);
	}
	return p;
}

static void buf_free(void *p, size_t n)
{
	if (use_mmap)
		munmap(p, n);
	else
		free(p);
}

/* A 64-bit LCG step; quality does not matter, speed and independence do. */
static inline uint64_t next_rand(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

static const record *find(const record *a, size_t n, record key)
{
	size_t lo = 0, hi = n;

	if (linear) {
		for (size_t i = 0; i < n; i++)
			if (a[i] == key)
				return &a[i];
		return NULL;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid] == key)
			return &a[mid];
		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void *worker(void *argp)
{
	uint64_t state = 0x9e3779b97f4a7c15ULL * ((uintptr_t)argp + 1);
	uint64_t n = 0;
	size_t nrec = chunk_bytes / sizeof(record);

	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	while (atomic_load_explicit(&running, memory_order_relaxed)) {
		const record *src = chunks[next_rand(&state) % nchunks];
		size_t m = random_size ? next_rand(&state) % nrec + 1 : nrec;
		record *copy = buf_alloc(m * sizeof(record));
		record key;

		memcpy(copy, src, m * sizeof(record));
		key = next_rand(&state) % m;
		if (!find(copy, m, key)) {
			fprintf(stderr, "ebizzy: record %llu not found\n",
				(unsigned long long)key);
			exit(1);
		}
		buf_free(copy, m * sizeof(record));
		n++;
		opmark();
	}
	return (void *)(uintptr_t)n;
}

int main(int argc, char **argv)
{
	struct rusage r0, r1;
	pthread_t *tids;
	uint64_t total = 0;
	double t0, t1;
	int c;

	nthreads = 2 * sysconf(_SC_NPROCESSORS_ONLN);
	while ((c = getopt(argc, argv, "t:S:n:s:mMRz")) != -1) {
		switch (c) {
		case 't':
			nthreads = arg(argv[0], c, optarg, 1, 1024);
			break;
		case 'S':
			seconds = arg(argv[0], c, optarg, 1, 3600);
			break;
		case 'n':
			nchunks = arg(argv[0], c, optarg, 1, 4096);
			break;
		case 's':
			chunk_bytes = arg(argv[0], c, optarg, sizeof(record),
					  1UL << 30);
			break;
		case 'm':
			use_mmap = 1;
			break;
		case 'M':
			no_mmap = 1;
			break;
		case 'R':
			random_size = 1;
			break;
		case 'z':
			linear = 1;
			break;
		default:
			print_usage(argv[0]);
		}
	}
	if (optind != argc)
		print_usage(argv[0]);
	if (use_mmap && no_mmap) {
		fprintf(stderr, "%s: -m and -M exclude each other\n", argv[0]);
		return 2;
	}
	if (no_mmap)
		mallopt(M_MMAP_MAX, 0);
	opmark_init();

	chunks = calloc(nchunks, sizeof(*chunks));
	tids = calloc(nthreads, sizeof(*tids));
	if (!chunks || !tids)
		return 1;
	for (unsigned int i = 0; i < nchunks; i++) {
		chunks[i] = buf_alloc(chunk_bytes);
		for (size_t j = 0; j < chunk_bytes / sizeof(record); j++)
			chunks[i][j] = j;
	}
	atomic_store(&running, 1);
	for (unsigned int i = 0; i < nthreads; i++)
		if (pthread_create(&tids[i], NULL, worker,
				   (void *)(uintptr_t)i)) {
			fprintf(stderr, "ebizzy: cannot create thread %u\n", i);
			return 1;
		}
	getrusage(RUSAGE_SELF, &r0);
	t0 = opmark_now();
	atomic_store_explicit(&go, 1, memory_order_release);
	sleep(seconds);
	atomic_store(&running, 0);
	for (unsigned int i = 0; i < nthreads; i++) {
		void *n;

		pthread_join(tids[i], &n);
		total += (uintptr_t)n;
	}
	t1 = opmark_now();
	getrusage(RUSAGE_SELF, &r1);
	printf("%llu records/s\n",
	       (unsigned long long)(total / (t1 - t0)));
	printf("real %5.2f s\nuser %5.2f s\nsys  %5.2f s\n", t1 - t0,
	       (r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
		       (r1.ru_utime.tv_usec - r0.ru_utime.tv_usec) / 1e6,
	       (r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
		       (r1.ru_stime.tv_usec - r0.ru_stime.tv_usec) / 1e6);
	return opmark_report("ebizzy", "records", total, t1 - t0) ? 1 : 0;
}
