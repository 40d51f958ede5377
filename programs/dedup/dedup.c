// SPDX-License-Identifier: MIT
/*
 * dedup-like compression pipeline (docs/workloads.md, "dedup"): the
 * structure of PARSEC 3.0's dedup kernel written anew for this project.
 *
 * Five stages, the middle three with -t threads each:
 *   fragment (1)  copies the input, 128 MiB at a time, into a malloc'd
 *                 block (glibc mmaps it) and cuts it into coarse chunks:
 *                 jump 2 MiB, then cut at the next content anchor; the
 *                 tail after the last anchor is carried into the next
 *                 block; a block is freed (munmap) when the last chunk cut
 *                 from it is done;
 *   refine (t)    cuts a coarse chunk into fine chunks at content anchors
 *                 (rolling hash over a 32-byte window, anchor when the low 12
 *                 bits are 0, at least 1 KiB: ~5 KiB on average);
 *   dedup (t)     SHA-1 of each fine chunk, looked up in a global hash table
 *                 (a lock per bucket group); new chunks go to compress,
 *                 duplicates straight to reorder;
 *   compress (t)  zlib (level 6) of each new chunk into a buffer of zlib's
 *                 bound, shrunk to the result with realloc;
 *   reorder (1)   writes the chunks in input order (compressed data, or the
 *                 SHA-1 of a duplicate) with one write() each.
 * Between stages: bounded FIFO queues (mutex + two condition variables),
 * one per group of 4 threads, items moved in batches of up to 20, capacity
 * 2^20 items (far above the pipeline's depth). One op = one fine chunk
 * written by reorder.
 *
 *   dedup -g MB -o FILE          generate a deterministic input of MB MiB
 *   dedup [-t N] [-p PASSES] -i IN -o OUT
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../common/opmark.h"

#define READ_BLOCK (128UL << 20)
#define COARSE_JUMP (2UL << 20)
#define WINDOW 32
#define ANCHOR_MASK 0xfffU
#define MIN_FINE 1024
#define BATCH 20
#define QUEUE_CAP (1UL << 20)
#define THREADS_PER_QUEUE 4
#define BUCKETS (1U << 16)
#define BUCKET_LOCKS 256
#define SHA_LEN 20

/* ---- rolling hash (a table-driven polynomial hash over WINDOW bytes) ---- */

static uint32_t roll_in[256], roll_out[256];

static void roll_init(void)
{
	uint64_t s = 0x2545f4914f6cdd1dULL;

	for (int i = 0; i < 256; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		roll_in[i] = (uint32_t)s;
	}
	/* roll_out[b]: b's contribution after WINDOW shifts by one bit. */
	for (int i = 0; i < 256; i++) {
		uint32_t v = roll_in[i];

		roll_out[i] = (v << (WINDOW % 32)) | (WINDOW % 32 ? v >> (32 - WINDOW % 32) : 0);
	}
}

static inline uint32_t rotl1(uint32_t h)
{
	return (h << 1) | (h >> 31);
}

/*
 * Length of the next content-defined piece of p[0..n): the first position
 * >= min where the window hash has its low bits 0, else n.
 */
static size_t next_anchor(const unsigned char *p, size_t n, size_t min)
{
	uint32_t h = 0;
	size_t i;

	if (n <= min || n < WINDOW)
		return n;
	for (i = 0; i < WINDOW; i++)
		h = rotl1(h) ^ roll_in[p[i]];
	for (; i < n; i++) {
		if (i >= min && (h & ANCHOR_MASK) == 0)
			return i;
		h = rotl1(h) ^ roll_out[p[i - WINDOW]] ^ roll_in[p[i]];
	}
	return n;
}

/* ---- items and queues ---- */

/* A read block: the chunks cut from it point into buf. */
struct block {
	unsigned char *buf;
	int refs; /* the fragment stage's, and one per chunk using buf */
	pthread_mutex_t lock;
};

struct item {
	uint64_t l1, l2;
	int last; /* the last fine chunk of its coarse chunk */
	struct block *c;
	const unsigned char *data;
	size_t len;
	unsigned char sha[SHA_LEN];
	int dup;
	unsigned char *z;
	size_t zlen;
};

struct queue {
	pthread_mutex_t m;
	pthread_cond_t not_empty, not_full;
	void **ring;
	size_t head, count;
	int producers;
};

static void queue_init(struct queue *q, int producers)
{
	pthread_mutex_init(&q->m, NULL);
	pthread_cond_init(&q->not_empty, NULL);
	pthread_cond_init(&q->not_full, NULL);
	q->ring = malloc(QUEUE_CAP * sizeof(void *));
	if (!q->ring) {
		fprintf(stderr, "dedup: out of memory (queue)\n");
		exit(1);
	}
	q->head = 0;
	q->count = 0;
	q->producers = producers;
}

/*
 * Puts n items; blocks while they do not fit; wakes one consumer. Not
 * inlined nor cloned (nor queue_get), so that a uprobe sees every call
 * (scripts/measure-queues-dedup.bt).
 */
static __attribute__((noinline, noclone)) void
queue_put(struct queue *q, void **v, size_t n)
{
	pthread_mutex_lock(&q->m);
	while (QUEUE_CAP - q->count < n)
		pthread_cond_wait(&q->not_full, &q->m);
	for (size_t i = 0; i < n; i++)
		q->ring[(q->head + q->count + i) % QUEUE_CAP] = v[i];
	q->count += n;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->m);
}

/* Takes up to max items; blocks while empty and producers remain; 0 = end. */
static __attribute__((noinline, noclone)) size_t
queue_get(struct queue *q, void **v, size_t max)
{
	size_t n;

	pthread_mutex_lock(&q->m);
	while (q->count == 0 && q->producers > 0)
		pthread_cond_wait(&q->not_empty, &q->m);
	n = q->count < max ? q->count : max;
	for (size_t i = 0; i < n; i++)
		v[i] = q->ring[(q->head + i) % QUEUE_CAP];
	q->head = (q->head + n) % QUEUE_CAP;
	q->count -= n;
	if (n)
		pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->m);
	return n;
}

static void queue_done(struct queue *q)
{
	pthread_mutex_lock(&q->m);
	if (--q->producers == 0)
		pthread_cond_broadcast(&q->not_empty);
	pthread_mutex_unlock(&q->m);
}

/* ---- global state ---- */

static int nthreads = 16, nqueues;
static struct queue *refine_q, *dedup_q, *compress_q, *reorder_q;
static const unsigned char *input;
static size_t input_len;
static int out_fd;

struct entry {
	unsigned char sha[SHA_LEN];
	struct entry *next;
};

static struct entry *table[BUCKETS];
static pthread_mutex_t table_locks[BUCKET_LOCKS];

/* Whether the hash was seen before (inserts it if not). */
static int table_seen(const unsigned char *sha)
{
	uint32_t b;
	struct entry *e;
	int seen = 0;

	memcpy(&b, sha, sizeof(b));
	b %= BUCKETS;
	pthread_mutex_lock(&table_locks[b % BUCKET_LOCKS]);
	for (e = table[b]; e; e = e->next)
		if (!memcmp(e->sha, sha, SHA_LEN)) {
			seen = 1;
			break;
		}
	if (!seen) {
		e = malloc(sizeof(*e));
		if (!e) {
			fprintf(stderr, "dedup: out of memory (table)\n");
			exit(1);
		}
		memcpy(e->sha, sha, SHA_LEN);
		e->next = table[b];
		table[b] = e;
	}
	pthread_mutex_unlock(&table_locks[b % BUCKET_LOCKS]);
	return seen;
}

static void table_clear(void)
{
	for (unsigned int b = 0; b < BUCKETS; b++) {
		while (table[b]) {
			struct entry *e = table[b];

			table[b] = e->next;
			free(e);
		}
	}
}

static void block_get(struct block *b)
{
	pthread_mutex_lock(&b->lock);
	b->refs++;
	pthread_mutex_unlock(&b->lock);
}

static void block_put(struct block *b)
{
	int last;

	pthread_mutex_lock(&b->lock);
	last = --b->refs == 0;
	pthread_mutex_unlock(&b->lock);
	if (last) {
		free(b->buf); /* mmapped: munmap and its TLB shootdown */
		pthread_mutex_destroy(&b->lock);
		free(b);
	}
}

/* ---- stages ---- */

static void send_coarse(struct block *b, const unsigned char *p, size_t len,
			uint64_t *l1)
{
	struct item *it = calloc(1, sizeof(*it));

	if (!it) {
		fprintf(stderr, "dedup: out of memory (item)\n");
		exit(1);
	}
	block_get(b);
	it->l1 = (*l1)++;
	it->c = b;
	it->data = p;
	it->len = len;
	queue_put(&refine_q[it->l1 % nqueues], (void **)&it, 1);
}

static void *fragment(void *unused)
{
	size_t off = 0, nleft = 0;
	struct block *prev = NULL;
	const unsigned char *left = NULL;
	uint64_t l1 = 0;

	(void)unused;
	for (;;) {
		size_t take = input_len - off < READ_BLOCK ? input_len - off :
							      READ_BLOCK;
		size_t n = nleft + take, pos = 0;
		struct block *b;

		if (n == 0)
			break;
		b = calloc(1, sizeof(*b));
		if (b)
			b->buf = malloc(n);
		if (!b || !b->buf) {
			fprintf(stderr, "dedup: out of memory (read block)\n");
			exit(1);
		}
		pthread_mutex_init(&b->lock, NULL);
		b->refs = 1;
		memcpy(b->buf, left, nleft);
		memcpy(b->buf + nleft, input + off, take);
		off += take;
		if (prev)
			block_put(prev);
		while (n - pos > COARSE_JUMP) {
			size_t a = next_anchor(b->buf + pos + COARSE_JUMP,
					       n - pos - COARSE_JUMP, 0);

			if (pos + COARSE_JUMP + a >= n)
				break; /* no anchor: carry the tail over */
			send_coarse(b, b->buf + pos, COARSE_JUMP + a, &l1);
			pos += COARSE_JUMP + a;
		}
		if (off == input_len) {
			if (pos < n)
				send_coarse(b, b->buf + pos, n - pos, &l1);
			block_put(b);
			break;
		}
		prev = b;
		left = b->buf + pos;
		nleft = n - pos;
	}
	for (int q = 0; q < nqueues; q++)
		queue_done(&refine_q[q]);
	return NULL;
}

static void *refine(void *arg)
{
	int qid = (int)(intptr_t)arg / THREADS_PER_QUEUE;
	void *in[BATCH], *out[BATCH];
	size_t n, nout = 0;

	while ((n = queue_get(&refine_q[qid], in, BATCH)) > 0) {
		for (size_t k = 0; k < n; k++) {
			struct item *ci = in[k];
			struct block *c = ci->c;
			size_t off = 0;
			uint64_t l2 = 0;

			while (off < ci->len) {
				size_t len = next_anchor(ci->data + off,
							 ci->len - off, MIN_FINE);
				struct item *it = calloc(1, sizeof(*it));

				if (!it)
					exit(1);
				it->l1 = ci->l1;
				it->l2 = l2++;
				it->c = c;
				it->data = ci->data + off;
				it->len = len;
				off += len;
				it->last = off == ci->len;
				block_get(c);
				out[nout++] = it;
				if (nout == BATCH) {
					queue_put(&dedup_q[qid], out, nout);
					nout = 0;
				}
			}
			free(ci);
			block_put(c);
		}
	}
	if (nout)
		queue_put(&dedup_q[qid], out, nout);
	queue_done(&dedup_q[qid]);
	return NULL;
}

static void *deduplicate(void *arg)
{
	int qid = (int)(intptr_t)arg / THREADS_PER_QUEUE;
	void *in[BATCH], *to_c[BATCH], *to_r[BATCH];
	size_t n, nc = 0, nr = 0;

	while ((n = queue_get(&dedup_q[qid], in, BATCH)) > 0) {
		for (size_t k = 0; k < n; k++) {
			struct item *it = in[k];
			unsigned int mdlen;

			if (!EVP_Digest(it->data, it->len, it->sha, &mdlen,
					EVP_sha1(), NULL)) {
				fprintf(stderr, "dedup: SHA-1 failed\n");
				exit(1);
			}
			it->dup = table_seen(it->sha);
			if (it->dup) {
				block_put(it->c);
				it->c = NULL;
				to_r[nr++] = it;
			} else {
				to_c[nc++] = it;
			}
			if (nc == BATCH) {
				queue_put(&compress_q[qid], to_c, nc);
				nc = 0;
			}
			if (nr == BATCH) {
				queue_put(&reorder_q[qid], to_r, nr);
				nr = 0;
			}
		}
	}
	if (nc)
		queue_put(&compress_q[qid], to_c, nc);
	if (nr)
		queue_put(&reorder_q[qid], to_r, nr);
	queue_done(&compress_q[qid]);
	queue_done(&reorder_q[qid]);
	return NULL;
}

static void *compress_stage(void *arg)
{
	int qid = (int)(intptr_t)arg / THREADS_PER_QUEUE;
	void *in[BATCH];
	size_t n;

	while ((n = queue_get(&compress_q[qid], in, BATCH)) > 0) {
		for (size_t k = 0; k < n; k++) {
			struct item *it = in[k];
			uLongf zlen = compressBound(it->len);

			it->z = malloc(zlen);
			if (!it->z || compress2(it->z, &zlen, it->data, it->len,
						6) != Z_OK) {
				fprintf(stderr, "dedup: zlib failed\n");
				exit(1);
			}
			/* Shrink to the result, as PARSEC's mbuffer_realloc. */
			it->z = realloc(it->z, zlen ? zlen : 1);
			if (!it->z) {
				fprintf(stderr, "dedup: out of memory (realloc)\n");
				exit(1);
			}
			it->zlen = zlen;
			block_put(it->c);
			it->c = NULL;
		}
		queue_put(&reorder_q[qid], in, n);
	}
	queue_done(&reorder_q[qid]);
	return NULL;
}

/* Pending items of one coarse chunk, indexed by l2. */
struct pending {
	struct item **v;
	size_t cap;
};

static void write_all(const void *p, size_t n)
{
	const char *b = p;

	while (n) {
		ssize_t w = write(out_fd, b, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			fprintf(stderr, "dedup: write: %s\n", strerror(errno));
			exit(1);
		}
		b += w;
		n -= w;
	}
}

static uint64_t written, duplicates;

static void *reorder(void *unused)
{
	/* Every coarse chunk but the last is longer than COARSE_JUMP. */
	size_t nl1 = input_len / COARSE_JUMP + 2;
	struct pending *pend = calloc(nl1, sizeof(*pend));
	uint64_t next_l1 = 0, next_l2 = 0;
	int open = nqueues, q = 0;
	char *closed = calloc(nqueues, 1);
	void *in[BATCH];

	(void)unused;
	if (!pend || !closed)
		exit(1);
	while (open > 0) {
		size_t n;

		/* Round robin over the queues still open. */
		while (closed[q])
			q = (q + 1) % nqueues;
		n = queue_get(&reorder_q[q], in, BATCH);
		if (n == 0) {
			closed[q] = 1; /* drained, and its producers ended */
			open--;
			q = (q + 1) % nqueues;
			continue;
		}
		q = (q + 1) % nqueues;
		for (size_t k = 0; k < n; k++) {
			struct item *it = in[k];
			struct pending *p = &pend[it->l1];

			if (it->l2 >= p->cap) {
				size_t cap = p->cap ? p->cap : 512;

				while (cap <= it->l2)
					cap *= 2;
				p->v = realloc(p->v, cap * sizeof(*p->v));
				if (!p->v)
					exit(1);
				memset(p->v + p->cap, 0,
				       (cap - p->cap) * sizeof(*p->v));
				p->cap = cap;
			}
			p->v[it->l2] = it;
		}
		/* Write whatever is next in input order. */
		while (next_l1 < nl1 && next_l2 < pend[next_l1].cap &&
		       pend[next_l1].v[next_l2]) {
			struct item *it = pend[next_l1].v[next_l2];
			int last = it->last;

			if (it->dup) {
				duplicates++;
				write_all("D", 1);
				write_all(it->sha, SHA_LEN);
			} else {
				uint32_t len = it->zlen;

				write_all("Z", 1);
				write_all(&len, sizeof(len));
				write_all(it->z, it->zlen);
				free(it->z);
			}
			pend[next_l1].v[next_l2] = NULL;
			free(it);
			written++;
			opmark();
			if (last) {
				free(pend[next_l1].v);
				pend[next_l1].v = NULL;
				pend[next_l1].cap = 0;
				next_l1++;
				next_l2 = 0;
			} else {
				next_l2++;
			}
		}
	}
	free(pend);
	free(closed);
	return NULL;
}

/* ---- input generator ---- */

static uint64_t gen_state = 0x853c49e6748fea9bULL;

static uint64_t gen_rand(void)
{
	gen_state ^= gen_state << 13;
	gen_state ^= gen_state >> 7;
	gen_state ^= gen_state << 17;
	return gen_state;
}

/*
 * Text-like data (words of a fixed vocabulary) in which about a third of the
 * bytes repeat an earlier stretch of 4..64 KiB (what dedup finds).
 */
static int generate(size_t mib, const char *path)
{
	size_t n = mib << 20, off = 0;
	unsigned char *b = malloc(n);
	char words[4096][12];
	int fd;

	if (!b) {
		fprintf(stderr, "dedup: out of memory (%zu MiB)\n", mib);
		return 1;
	}
	for (int w = 0; w < 4096; w++) {
		int len = 2 + gen_rand() % 9;

		for (int i = 0; i < len; i++)
			words[w][i] = 'a' + gen_rand() % 26;
		words[w][len] = '\0';
	}
	while (off < n) {
		size_t len = (4 + gen_rand() % 61) << 10;

		if (len > n - off)
			len = n - off;
		if (off > (64UL << 10) && gen_rand() % 3 == 0) {
			size_t from = gen_rand() % (off - len + 1);

			memmove(b + off, b + from, len);
			off += len;
			continue;
		}
		for (size_t end = off + len; off < end;) {
			const char *w = words[gen_rand() % 4096];
			size_t wl = strlen(w);

			if (wl + 1 > end - off)
				wl = end - off - 1;
			memcpy(b + off, w, wl);
			off += wl;
			if (off < end)
				b[off++] = gen_rand() % 8 ? ' ' : '\n';
		}
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "dedup: %s: %s\n", path, strerror(errno));
		return 1;
	}
	out_fd = fd;
	write_all(b, n);
	free(b);
	return close(fd) ? 1 : 0;
}

/* ---- main ---- */

static void print_usage(const char *cmd)
{
	fprintf(stderr,
		"usage: %s -g MIB -o FILE              generate an input (1..4096 MiB)\n"
		"       %s [-t N] [-p PASSES] -i IN -o OUT  run (N 1..256, default 16; PASSES 1..1000)\n",
		cmd, cmd);
	exit(2);
}

static long num(const char *cmd, char opt, const char *s, long lo, long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "%s: -%c %s: allowed %ld..%ld\n", cmd, opt, s,
			lo, hi);
		exit(2);
	}
	return v;
}

static void run_pass(void)
{
	int per = nthreads;
	pthread_t f, r, *ts = calloc(3 * per, sizeof(pthread_t));

	if (!ts)
		exit(1);
	nqueues = (per + THREADS_PER_QUEUE - 1) / THREADS_PER_QUEUE;
	refine_q = calloc(nqueues, sizeof(struct queue));
	dedup_q = calloc(nqueues, sizeof(struct queue));
	compress_q = calloc(nqueues, sizeof(struct queue));
	reorder_q = calloc(nqueues, sizeof(struct queue));
	if (!refine_q || !dedup_q || !compress_q || !reorder_q)
		exit(1);
	for (int q = 0; q < nqueues; q++) {
		int group = per - q * THREADS_PER_QUEUE;

		if (group > THREADS_PER_QUEUE)
			group = THREADS_PER_QUEUE;
		queue_init(&refine_q[q], 1);
		queue_init(&dedup_q[q], group);
		queue_init(&compress_q[q], group);
		queue_init(&reorder_q[q], 2 * group);
	}
	pthread_create(&f, NULL, fragment, NULL);
	for (int i = 0; i < per; i++) {
		pthread_create(&ts[i], NULL, refine, (void *)(intptr_t)i);
		pthread_create(&ts[per + i], NULL, deduplicate,
			       (void *)(intptr_t)i);
		pthread_create(&ts[2 * per + i], NULL, compress_stage,
			       (void *)(intptr_t)i);
	}
	pthread_create(&r, NULL, reorder, NULL);
	pthread_join(f, NULL);
	for (int i = 0; i < 3 * per; i++)
		pthread_join(ts[i], NULL);
	pthread_join(r, NULL);
	for (int q = 0; q < nqueues; q++) {
		free(refine_q[q].ring);
		free(dedup_q[q].ring);
		free(compress_q[q].ring);
		free(reorder_q[q].ring);
	}
	free(refine_q);
	free(dedup_q);
	free(compress_q);
	free(reorder_q);
	free(ts);
	table_clear();
}

int main(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	long gen = 0, passes = 1;
	struct stat st;
	unsigned char *buf;
	double t0, t1;
	int c, fd;

	while ((c = getopt(argc, argv, "g:t:p:i:o:")) != -1) {
		switch (c) {
		case 'g':
			gen = num(argv[0], c, optarg, 1, 4096);
			break;
		case 't':
			nthreads = num(argv[0], c, optarg, 1, 256);
			break;
		case 'p':
			passes = num(argv[0], c, optarg, 1, 1000);
			break;
		case 'i':
			in = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		default:
			print_usage(argv[0]);
		}
	}
	if (optind != argc || !out || (gen && in) || (!gen && !in))
		print_usage(argv[0]);
	if (gen)
		return generate(gen, out);

	fd = open(in, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "dedup: %s: %s\n", in, strerror(errno));
		return 2;
	}
	input_len = st.st_size;
	buf = malloc(input_len ? input_len : 1);
	if (!buf) {
		fprintf(stderr, "dedup: out of memory (input)\n");
		return 1;
	}
	/* The input is read whole before the timed part (PARSEC's preloading). */
	for (size_t off = 0; off < input_len;) {
		ssize_t r = read(fd, buf + off, input_len - off);

		if (r <= 0) {
			fprintf(stderr, "dedup: %s: short read\n", in);
			return 1;
		}
		off += r;
	}
	close(fd);
	input = buf;
	out_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (out_fd < 0) {
		fprintf(stderr, "dedup: %s: %s\n", out, strerror(errno));
		return 2;
	}
	roll_init();
	for (int i = 0; i < BUCKET_LOCKS; i++)
		pthread_mutex_init(&table_locks[i], NULL);
	opmark_init();
	t0 = opmark_now();
	for (long p = 0; p < passes; p++)
		run_pass();
	t1 = opmark_now();
	if (close(out_fd)) {
		fprintf(stderr, "dedup: %s: %s\n", out, strerror(errno));
		return 1;
	}
	printf("dedup: %.1f MiB in, %.1f MB/s, %llu of %llu chunks duplicates\n",
	       passes * input_len / 1048576.0,
	       passes * input_len / 1e6 / (t1 - t0),
	       (unsigned long long)duplicates, (unsigned long long)written);
	return opmark_report("dedup", "chunks", written, t1 - t0) ? 1 : 0;
}
