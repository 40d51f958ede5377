// SPDX-License-Identifier: MIT
/*
 * PARSEC vips' operation chain over Debian's libvips 8 (docs/workloads.md,
 * "vips"): the benchmark PARSEC 3.0 runs (libvips 7's im_benchmarkn with one
 * stage: a LabQ image is colour-processed, cropped, shrunk, sharpened, scaled
 * back and converted to sRGB), written anew against the libvips 8 API. The
 * operations, in order:
 *   LabQ -> Lab (float); crop 100 pixels off every edge; shrink by 10%
 *   (affine 0.9, bilinear); mask of L > 99 (the white surround); darken
 *   (L / 1.18); Lab -> XYZ; D65 -> D50 (3x3 recomb); white point
 *   (1.06, 1, 1.01); brighten x1.5; XYZ -> Lab; shadows down (L - 2); a
 *   white image (L 100) chosen where the mask is set (ifthenelse); Lab ->
 *   LabQ; sharpen; affine back to the input's size (bilinear); to sRGB
 *   (libvips 8 decodes LabQ in affine, so from Lab).
 * libvips runs the chain demand-driven over tiles on its thread pool
 * (VIPS_CONCURRENCY or -t threads).
 *
 *   vipsbench -g WIDTHxHEIGHT OUT.v     generate a deterministic LabQ image
 *   vipsbench [-t N] [-p PASSES] IN.v OUT.v
 * One op = one image pass; the throughput is also printed in Mpixel/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vips/vips.h>

#include "../common/opmark.h"

static void fail(const char *what)
{
	fprintf(stderr, "vipsbench: %s: %s\n", what, vips_error_buffer());
	exit(1);
}

/* A smooth, textured colour image (sines plus noise) converted to LabQ. */
static int generate(int w, int h, const char *out)
{
	VipsImage *base = vips_image_new();
	VipsImage **t = (VipsImage **)vips_object_local_array(VIPS_OBJECT(base), 12);

	if (vips_sines(&t[0], w, h, "hfreq", 3.0, "vfreq", 5.0, NULL) ||
	    vips_sines(&t[1], w, h, "hfreq", 11.0, "vfreq", 2.0, NULL) ||
	    vips_gaussnoise(&t[2], w, h, "sigma", 0.15, "mean", 0.0,
			    "seed", 42, NULL) ||
	    vips_add(t[0], t[2], &t[3], NULL) ||
	    vips_linear1(t[3], &t[4], 30.0, 55.0, NULL) ||
	    vips_linear1(t[1], &t[5], 40.0, 0.0, NULL) ||
	    vips_linear1(t[0], &t[6], -25.0, 5.0, NULL))
		fail("generate");
	{
		VipsImage *bands[3] = { t[4], t[5], t[6] };

		if (vips_bandjoin(bands, &t[9], 3, NULL) ||
		    vips_copy(t[9], &t[10], "interpretation",
			      VIPS_INTERPRETATION_LAB, NULL) ||
		    vips_Lab2LabQ(t[10], &t[11], NULL) ||
		    vips_image_write_to_file(t[11], out, NULL))
			fail("generate");
	}
	g_object_unref(base);
	return 0;
}

/* One pass of the chain: in (LabQ) -> out file (sRGB). */
static void pass(const char *in_path, const char *out_path)
{
	static const double zero[3] = { 0, 0, 0 }, one[3] = { 1, 1, 1 };
	static const double darken[3] = { 1.0 / 1.18, 1, 1 };
	static const double whitepoint[3] = { 1.06, 1, 1.01 };
	static const double shadow[3] = { -2, 0, 0 };
	static const double white[3] = { 100, 0, 0 };
	VipsImage *base = vips_image_new();
	VipsImage **t = (VipsImage **)vips_object_local_array(VIPS_OBJECT(base), 24);
	VipsImage *in;
	int w, h;

	in = vips_image_new_from_file(in_path, "access", VIPS_ACCESS_RANDOM,
				      NULL);
	if (!in)
		fail(in_path);
	w = in->Xsize;
	h = in->Ysize;
	t[0] = vips_image_new_matrixv(3, 3,
				      1.13529, -0.0604663, -0.0606321,
				      0.0975399, 0.935024, -0.0256156,
				      -0.0336428, 0.0414702, 0.994135);
	if (!t[0] ||
	    vips_LabQ2Lab(in, &t[1], NULL) ||
	    vips_extract_area(t[1], &t[2], 100, 100, w - 200, h - 200, NULL) ||
	    vips_affine(t[2], &t[3], 0.9, 0, 0, 0.9, "interpolate",
			vips_interpolate_bilinear_static(), NULL) ||
	    vips_extract_band(t[3], &t[4], 0, NULL) ||
	    vips_more_const1(t[4], &t[5], 99, NULL) ||
	    vips_linear(t[3], &t[6], darken, zero, 3, NULL) ||
	    vips_Lab2XYZ(t[6], &t[7], NULL) ||
	    vips_recomb(t[7], &t[8], t[0], NULL) ||
	    vips_linear(t[8], &t[9], whitepoint, zero, 3, NULL) ||
	    vips_linear1(t[9], &t[10], 1.5, 0.0, NULL) ||
	    vips_XYZ2Lab(t[10], &t[11], NULL) ||
	    vips_linear(t[11], &t[12], one, shadow, 3, NULL) ||
	    vips_black(&t[13], t[5]->Xsize, t[5]->Ysize, "bands", 3, NULL) ||
	    vips_linear(t[13], &t[14], zero, white, 3, NULL) ||
	    vips_ifthenelse(t[5], t[14], t[12], &t[15], NULL) ||
	    vips_copy(t[15], &t[16], "interpretation", VIPS_INTERPRETATION_LAB,
		      NULL) ||
	    vips_Lab2LabQ(t[16], &t[17], NULL) ||
	    vips_sharpen(t[17], &t[18], "sigma", 3.5, "x1", 2.5, "y2", 40.0,
			 "y3", 20.0, "m1", 0.5, "m2", 1.5, NULL) ||
	    vips_affine(t[18], &t[19], (double)w / t[18]->Xsize, 0, 0,
			(double)h / t[18]->Ysize, "interpolate",
			vips_interpolate_bilinear_static(), NULL) ||
	    vips_colourspace(t[19], &t[20], VIPS_INTERPRETATION_sRGB, NULL) ||
	    vips_image_write_to_file(t[20], out_path, NULL))
		fail("pass");
	g_object_unref(in);
	g_object_unref(base);
}

static void print_usage(const char *cmd)
{
	fprintf(stderr,
		"usage: %s -g WIDTHxHEIGHT OUT.v          generate (16..65536 each)\n"
		"       %s [-t N] [-p PASSES] IN.v OUT.v   run (N 1..256, PASSES 1..1000)\n",
		cmd, cmd);
	exit(2);
}

static long num(const char *cmd, const char *what, const char *s, long lo,
		long hi)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "%s: %s %s: allowed %ld..%ld\n", cmd, what, s,
			lo, hi);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *gen = NULL;
	long threads = 0, passes = 1;
	double t0, t1;
	int c;

	if (VIPS_INIT(argv[0]))
		fail("init");
	while ((c = getopt(argc, argv, "g:t:p:")) != -1) {
		switch (c) {
		case 'g':
			gen = optarg;
			break;
		case 't':
			threads = num(argv[0], "-t", optarg, 1, 256);
			break;
		case 'p':
			passes = num(argv[0], "-p", optarg, 1, 1000);
			break;
		default:
			print_usage(argv[0]);
		}
	}
	if (gen) {
		char wbuf[16], hbuf[16];

		if (optind + 1 != argc ||
		    sscanf(gen, "%15[0-9]x%15[0-9]", wbuf, hbuf) != 2) {
			fprintf(stderr, "%s: -g %s: allowed WIDTHxHEIGHT\n",
				argv[0], gen);
			return 2;
		}
		return generate(num(argv[0], "width", wbuf, 16, 65536),
				num(argv[0], "height", hbuf, 16, 65536),
				argv[optind]);
	}
	if (optind + 2 != argc)
		print_usage(argv[0]);
	if (threads)
		vips_concurrency_set(threads);
	/* Every pass recomputes: no operation cache between passes. */
	vips_cache_set_max(0);
	opmark_init();
	t0 = opmark_now();
	for (long p = 0; p < passes; p++) {
		pass(argv[optind], argv[optind + 1]);
		opmark();
	}
	t1 = opmark_now();
	{
		VipsImage *in = vips_image_new_from_file(argv[optind], NULL);

		if (!in)
			fail(argv[optind]);
		printf("vipsbench: %d threads, %.1f Mpixel/s\n",
		       vips_concurrency_get(),
		       passes * (double)in->Xsize * in->Ysize / 1e6 / (t1 - t0));
		g_object_unref(in);
	}
	vips_shutdown();
	return opmark_report("vips", "images", passes, t1 - t0) ? 1 : 0;
}
