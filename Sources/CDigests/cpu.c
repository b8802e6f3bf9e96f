// The choice of block functions: the x86 SHA extensions (with SSSE3 and SSE 4.1, which their code also uses)
// when CPUID reports them, the ARMv8 SHA-1 and SHA-2 instructions when the kernel's hardware capabilities
// list both, portable C otherwise. Detected once.
#include "CDigests.h"
#include "blocks.h"

#include <pthread.h>
#include <stdatomic.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#elif defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_SHA1
#define HWCAP_SHA1 (1 << 5)
#endif
#ifndef HWCAP_SHA2
#define HWCAP_SHA2 (1 << 6)
#endif
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int hardware;
static atomic_int forced_portable;

static void detect(void) {
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    int ssse3 = (c >> 9) & 1, sse41 = (c >> 19) & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    int sha = (b >> 29) & 1;
    hardware = ssse3 && sse41 && sha;
#elif defined(__aarch64__)
    unsigned long caps = getauxval(AT_HWCAP);
    hardware = (caps & HWCAP_SHA1) && (caps & HWCAP_SHA2);
#endif
}

int mw_digests_hardware(void) {
    pthread_once(&once, detect);
    return hardware;
}

int mw_digests_use_hardware(void) {
    return mw_digests_hardware() && !atomic_load_explicit(&forced_portable, memory_order_relaxed);
}

void mw_digests_force_portable(int on) { atomic_store(&forced_portable, on ? 1 : 0); }
