/* This CPU's FP32 FMA peak, measured: every OpenMP thread runs 12 independent chains of 256-bit FMAs
 * (AVX2 + FMA3; 12 chains cover 2 FMA pipes x up to 6 cycles of latency), best of 5 runs; 512-bit FMAs when
 * compiled with AVX-512 (-mavx512f: the peak of a core with 512-bit FMA units, what the catalog lists).
 * Prints one number, GFLOP/s over all threads (OMP_NUM_THREADS sets the count).
 * Built and run by benchmarks/bench_cpu_prefill.py:  cc -O2 -mavx2 -mfma -fopenmp fma_peak.c
 * and benchmarks/bench_cpu_paths.py:                 cc -O2 -mavx512f -mfma -fopenmp fma_peak.c */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef __AVX512F__
#define VEC __m512
#define LANES 16
#define SET1 _mm512_set1_ps
#define FMADD _mm512_fmadd_ps
#define ADD _mm512_add_ps
#define STORE _mm512_storeu_ps
#else
#define VEC __m256
#define LANES 8
#define SET1 _mm256_set1_ps
#define FMADD _mm256_fmadd_ps
#define ADD _mm256_add_ps
#define STORE _mm256_storeu_ps
#endif

int main(int argc, char **argv) {
    long iters = argc > 1 ? atol(argv[1]) : 100000000L;
    double best = 0;
    float sink = 0;
    for (int rep = 0; rep < 5; rep++) {
        double t0 = omp_get_wtime();
        #pragma omp parallel reduction(+:sink)
        {
            VEC a[12];
            const VEC m = SET1(0.999999f), c = SET1(1e-7f);
            for (int i = 0; i < 12; i++) a[i] = SET1((float)i);
            for (long k = 0; k < iters; k++) {
                #pragma GCC unroll 12
                for (int i = 0; i < 12; i++) a[i] = FMADD(a[i], m, c);
            }
            VEC s = a[0];
            for (int i = 1; i < 12; i++) s = ADD(s, a[i]);
            float o[LANES];
            STORE(o, s);
            sink += o[0];
        }
        double t = omp_get_wtime() - t0;
        double flops = (double)iters * 12 * LANES * 2 * omp_get_max_threads();
        if (flops / t > best) best = flops / t;
    }
    printf("%.3f\n", best / 1e9);
    return sink == 1.2345f;   /* keeps the chains live */
}
