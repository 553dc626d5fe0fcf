// mmaprobe CUDA harness: runs per-thread register images through one tensor-core instruction.
//
// The Python driver (mmaprobe/vectors/cuda.py) packs operand tiles into the registers each
// thread of a warp (mma.sync, DMMA) or warpgroup (wgmma) must hold, writes them to a binary
// file, and runs this program once per batch:
//
//     harness list              the instruction table: name threads a b c d b_tile_bytes compiled
//     harness info              the CUDA device this process sees and the architecture built for
//     harness run IN OUT        run every tile of IN, write the D registers to OUT
//
// A kernel only loads registers, issues the instruction and stores the D registers: every
// layout decision is the driver's, and the driver proves it on the GPU before trusting an
// output.  The file protocol (little-endian) is documented in cuda.py and mirrored by the
// structs below.  Exit status: 0 ok, 2 usage or malformed input, 3 CUDA error, 4 an output
// the GPU should have written was left untouched.
//
// Build (the driver does it once per GPU architecture):
//     nvcc -O3 -std=c++17 -gencode=arch=compute_XY,code=sm_XY -DMMAPROBE_TARGET_ARCH=XY
// with compute_90a/sm_90a on Hopper (wgmma needs the arch-specific feature set).

#include <cuda_runtime.h>

#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#ifndef MMAPROBE_TARGET_ARCH
#define MMAPROBE_TARGET_ARCH 0
#endif

#define MMAPROBE_NVCC_AT_LEAST(major, minor)                                                 \
    (__CUDACC_VER_MAJOR__ > (major) ||                                                       \
     (__CUDACC_VER_MAJOR__ == (major) && __CUDACC_VER_MINOR__ >= (minor)))

// ---- which instructions this build contains ------------------------------------------------
// The device pass decides from __CUDA_ARCH__, the host pass from MMAPROBE_TARGET_ARCH; both
// use the same thresholds, and a kernel whose instruction was compiled out reports it at run
// time (STATUS_NOT_COMPILED) instead of computing anything.
#define MMAPROBE_FP8_NVCC MMAPROBE_NVCC_AT_LEAST(12, 4)      // PTX ISA 8.4: fp8 mma.sync k32
#define MMAPROBE_FP8_K16_NVCC MMAPROBE_NVCC_AT_LEAST(12, 8)  // PTX ISA 8.7: fp8 k16, f16 acc

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define DEVICE_SM80 1
#else
#define DEVICE_SM80 0
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && MMAPROBE_FP8_NVCC
#define DEVICE_FP8 1
#else
#define DEVICE_FP8 0
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890 && MMAPROBE_FP8_K16_NVCC
#define DEVICE_FP8_NEW 1
#else
#define DEVICE_FP8_NEW 0
#endif
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define DEVICE_WGMMA 1
#else
#define DEVICE_WGMMA 0
#endif

#define HOST_SM80 (MMAPROBE_TARGET_ARCH >= 80)
#define HOST_FP8 (MMAPROBE_TARGET_ARCH >= 89 && MMAPROBE_FP8_NVCC)
#define HOST_FP8_NEW (MMAPROBE_TARGET_ARCH >= 89 && MMAPROBE_FP8_K16_NVCC)
#define HOST_WGMMA (MMAPROBE_TARGET_ARCH == 90)

#if DEVICE_SM80
#define WHEN_SM80(...) __VA_ARGS__
#else
#define WHEN_SM80(...) return false;
#endif
#if DEVICE_FP8
#define WHEN_FP8(...) __VA_ARGS__
#else
#define WHEN_FP8(...) return false;
#endif
#if DEVICE_FP8_NEW
#define WHEN_FP8_NEW(...) __VA_ARGS__
#else
#define WHEN_FP8_NEW(...) return false;
#endif
#if DEVICE_WGMMA
#define WHEN_WGMMA(...) __VA_ARGS__
#else
#define WHEN_WGMMA(...) return false;
#endif

// ---- the file protocol ----------------------------------------------------------------------
static const char INPUT_MAGIC[8] = {'M', 'M', 'A', 'P', 'R', 'I', 'N', '1'};
static const char OUTPUT_MAGIC[8] = {'M', 'M', 'A', 'P', 'R', 'O', 'U', '1'};
static const uint32_t PROTOCOL_VERSION = 1;
static const uint64_t MAX_TILES = 0x7FFFFFFFull;  // done marks are the tile index, never ~0u

struct InputHeader {          // 128 bytes, then the A, B and C images
    char magic[8];            // INPUT_MAGIC
    uint32_t version;         // PROTOCOL_VERSION
    uint32_t threads;         // threads per tile: 32 (warp) or 128 (warpgroup)
    uint64_t tiles;           // instructions to issue
    uint32_t a_words;         // 32-bit A register words per thread
    uint32_t b_words;         // 32-bit B register words per thread (0 when B is in shared memory)
    uint32_t c_words;         // 32-bit C register words per thread
    uint32_t d_words;         // 32-bit D register words per thread
    uint32_t b_tile_bytes;    // bytes of the shared-memory B image per tile (wgmma), else 0
    uint32_t reserved[5];     // zero
    char instruction[64];     // catalogue name, NUL-padded
};

struct OutputHeader {         // 128 bytes, then the D image
    char magic[8];            // OUTPUT_MAGIC
    uint32_t version;
    uint32_t threads;
    uint64_t tiles;
    uint32_t d_words;
    uint32_t reserved[9];
    char instruction[64];
};

static_assert(sizeof(InputHeader) == 128, "input header layout");
static_assert(sizeof(OutputHeader) == 128, "output header layout");

enum Status : int { STATUS_OK = 0, STATUS_NOT_COMPILED = 1 };

struct KernelArgs {
    const uint32_t* a;
    const uint32_t* b;
    const uint32_t* c;
    uint32_t* d;
    uint32_t* done;           // done[t] = t once tile t's D registers are stored
    int* status;
    uint64_t tiles;
};

// ---- instruction bodies ---------------------------------------------------------------------
// Each op is a struct with run(): registers in, registers out; false when compiled out.
// f32 accumulators use "f" operands and f64 ones "d"; everything else travels as b32 words.

__device__ __forceinline__ float as_f32(uint32_t w) { return __uint_as_float(w); }
__device__ __forceinline__ uint32_t as_u32(float f) { return __float_as_uint(f); }

#define MMA_BODY_F32ACC(PTX, A_LIST, B_LIST, A_OPERANDS, B_OPERANDS)                         \
    {                                                                                        \
        float d0, d1, d2, d3;                                                                \
        asm volatile(PTX " {%0, %1, %2, %3}, " A_LIST ", " B_LIST ", {%4, %5, %6, %7};\n"    \
                     : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)                                \
                     : "f"(as_f32(c[0])), "f"(as_f32(c[1])), "f"(as_f32(c[2])),              \
                       "f"(as_f32(c[3])), A_OPERANDS, B_OPERANDS);                           \
        d[0] = as_u32(d0); d[1] = as_u32(d1); d[2] = as_u32(d2); d[3] = as_u32(d3);          \
        return true;                                                                         \
    }

#define MMA_BODY_F16ACC(PTX, A_LIST, B_LIST, A_OPERANDS, B_OPERANDS)                         \
    {                                                                                        \
        uint32_t d0, d1;                                                                     \
        asm volatile(PTX " {%0, %1}, " A_LIST ", " B_LIST ", {%2, %3};\n"                    \
                     : "=r"(d0), "=r"(d1)                                                    \
                     : "r"(c[0]), "r"(c[1]), A_OPERANDS, B_OPERANDS);                        \
        d[0] = d0; d[1] = d1;                                                                \
        return true;                                                                         \
    }

// Operand numbers: D first, then C, then A and B; so A and B start at %8 after four f32
// accumulators and at %4 after two f16x2 ones.
#define A2_F32 "{%8, %9}"
#define A4_F32 "{%8, %9, %10, %11}"
#define B1_AFTER_A2_F32 "{%10}"
#define B2_AFTER_A4_F32 "{%12, %13}"
#define A2_F16 "{%4, %5}"
#define A4_F16 "{%4, %5, %6, %7}"
#define B1_AFTER_A2_F16 "{%6}"
#define B2_AFTER_A4_F16 "{%8, %9}"

#define A2_OPS "r"(a[0]), "r"(a[1])
#define A4_OPS "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3])
#define B1_OPS "r"(b[0])
#define B2_OPS "r"(b[0]), "r"(b[1])

// A with 4 registers (k16 f16/bf16, k8 tf32, k32 fp8), B with 2
#define MMA_A4B2_F32(PTX) MMA_BODY_F32ACC(PTX, A4_F32, B2_AFTER_A4_F32, A4_OPS, B2_OPS)
#define MMA_A4B2_F16(PTX) MMA_BODY_F16ACC(PTX, A4_F16, B2_AFTER_A4_F16, A4_OPS, B2_OPS)
// A with 2 registers (k8 f16/bf16, k4 tf32, k16 fp8), B with 1
#define MMA_A2B1_F32(PTX) MMA_BODY_F32ACC(PTX, A2_F32, B1_AFTER_A2_F32, A2_OPS, B1_OPS)
#define MMA_A2B1_F16(PTX) MMA_BODY_F16ACC(PTX, A2_F16, B1_AFTER_A2_F16, A2_OPS, B1_OPS)

#define DEFINE_MMA_OP(NAME, BODY)                                                            \
    struct NAME {                                                                            \
        static __device__ __forceinline__ bool run(const uint32_t* a, const uint32_t* b,     \
                                                   const uint32_t* c, uint32_t* d) {         \
            BODY                                                                             \
        }                                                                                    \
    };

// f16 and bf16 (sm_80)
DEFINE_MMA_OP(Mma_k8_f16_f16, WHEN_SM80(MMA_A2B1_F16("mma.sync.aligned.m16n8k8.row.col.f16.f16.f16.f16")))
DEFINE_MMA_OP(Mma_k8_f32_f16, WHEN_SM80(MMA_A2B1_F32("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32")))
DEFINE_MMA_OP(Mma_k16_f16_f16, WHEN_SM80(MMA_A4B2_F16("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16")))
DEFINE_MMA_OP(Mma_k16_f32_f16, WHEN_SM80(MMA_A4B2_F32("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32")))
DEFINE_MMA_OP(Mma_k8_f32_bf16, WHEN_SM80(MMA_A2B1_F32("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32")))
DEFINE_MMA_OP(Mma_k16_f32_bf16, WHEN_SM80(MMA_A4B2_F32("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")))
// tf32 (sm_80)
DEFINE_MMA_OP(Mma_k4_f32_tf32, WHEN_SM80(MMA_A2B1_F32("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32")))
DEFINE_MMA_OP(Mma_k8_f32_tf32, WHEN_SM80(MMA_A4B2_F32("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32")))

// fp8 (sm_89+): k32 with f32 accumulators since PTX ISA 8.4; k16 and f16 accumulators 8.7
#define FP8_K32_F32(NAME, AT, BT) \
    DEFINE_MMA_OP(NAME, WHEN_FP8(MMA_A4B2_F32("mma.sync.aligned.m16n8k32.row.col.f32." AT "." BT ".f32")))
#define FP8_K32_F16(NAME, AT, BT) \
    DEFINE_MMA_OP(NAME, WHEN_FP8_NEW(MMA_A4B2_F16("mma.sync.aligned.m16n8k32.row.col.f16." AT "." BT ".f16")))
#define FP8_K16_F32(NAME, AT, BT) \
    DEFINE_MMA_OP(NAME, WHEN_FP8_NEW(MMA_A2B1_F32("mma.sync.aligned.m16n8k16.row.col.f32." AT "." BT ".f32")))
#define FP8_K16_F16(NAME, AT, BT) \
    DEFINE_MMA_OP(NAME, WHEN_FP8_NEW(MMA_A2B1_F16("mma.sync.aligned.m16n8k16.row.col.f16." AT "." BT ".f16")))

#define FP8_ALL_PAIRS(MACRO, PREFIX)                                                         \
    MACRO(PREFIX##_e4m3_e4m3, "e4m3", "e4m3")                                                \
    MACRO(PREFIX##_e4m3_e5m2, "e4m3", "e5m2")                                                \
    MACRO(PREFIX##_e5m2_e4m3, "e5m2", "e4m3")                                                \
    MACRO(PREFIX##_e5m2_e5m2, "e5m2", "e5m2")

FP8_ALL_PAIRS(FP8_K32_F32, Mma_k32_f32)
FP8_ALL_PAIRS(FP8_K32_F16, Mma_k32_f16)
FP8_ALL_PAIRS(FP8_K16_F32, Mma_k16_f32)
FP8_ALL_PAIRS(FP8_K16_F16, Mma_k16_f16)

// DMMA: f64 m8n8k4 (sm_80); each f64 travels as two words, low word first
__device__ __forceinline__ double as_f64(uint32_t lo, uint32_t hi) {
    return __longlong_as_double((long long)(((uint64_t)hi << 32) | lo));
}
struct Dmma_m8n8k4_f64 {
    static __device__ __forceinline__ bool run(const uint32_t* a, const uint32_t* b,
                                               const uint32_t* c, uint32_t* d) {
        WHEN_SM80({
            double d0, d1;
            asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 "
                         "{%0, %1}, {%2}, {%3}, {%4, %5};\n"
                         : "=d"(d0), "=d"(d1)
                         : "d"(as_f64(a[0], a[1])), "d"(as_f64(b[0], b[1])),
                           "d"(as_f64(c[0], c[1])), "d"(as_f64(c[2], c[3])));
            const uint64_t w0 = (uint64_t)__double_as_longlong(d0);
            const uint64_t w1 = (uint64_t)__double_as_longlong(d1);
            d[0] = (uint32_t)w0; d[1] = (uint32_t)(w0 >> 32);
            d[2] = (uint32_t)w1; d[3] = (uint32_t)(w1 >> 32);
            return true;
        })
    }
};

// ---- wgmma (sm_90a): A in registers, B in shared memory through a descriptor ----------------
// The fence, the mma, the commit and the wait are one asm statement, so the compiler cannot
// move accesses to the accumulator registers between them.  scale-d = 1 (D = A*B + D, with D
// loaded from C); the immediate scale-a = scale-b = 1; f16/bf16 take imm-trans-b = 0 (B is
// K-major), tf32 and fp8 have no transpose operand.
#define WGMMA_BODY_F32ACC(PTX, TRANS_B)                                                      \
    {                                                                                        \
        float d0 = as_f32(c[0]), d1 = as_f32(c[1]), d2 = as_f32(c[2]), d3 = as_f32(c[3]);    \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"                             \
                     "wgmma.fence.sync.aligned;\n"                                           \
                     PTX " {%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1" TRANS_B ";\n"    \
                     "wgmma.commit_group.sync.aligned;\n"                                    \
                     "wgmma.wait_group.sync.aligned 0;\n}\n"                                 \
                     : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)                                \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1)       \
                     : "memory");                                                            \
        d[0] = as_u32(d0); d[1] = as_u32(d1); d[2] = as_u32(d2); d[3] = as_u32(d3);          \
        return true;                                                                         \
    }

#define WGMMA_BODY_F16ACC(PTX, TRANS_B)                                                      \
    {                                                                                        \
        uint32_t d0 = c[0], d1 = c[1];                                                       \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %7, 0;\n"                             \
                     "wgmma.fence.sync.aligned;\n"                                           \
                     PTX " {%0, %1}, {%2, %3, %4, %5}, %6, p, 1, 1" TRANS_B ";\n"            \
                     "wgmma.commit_group.sync.aligned;\n"                                    \
                     "wgmma.wait_group.sync.aligned 0;\n}\n"                                 \
                     : "+r"(d0), "+r"(d1)                                                    \
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(1)       \
                     : "memory");                                                            \
        d[0] = d0; d[1] = d1;                                                                \
        return true;                                                                         \
    }

#define DEFINE_WGMMA_OP(NAME, BODY)                                                          \
    struct NAME {                                                                            \
        static __device__ __forceinline__ bool run(const uint32_t* a, uint64_t desc_b,       \
                                                   const uint32_t* c, uint32_t* d) {         \
            BODY                                                                             \
        }                                                                                    \
    };

#define WG(SHAPE_TYPES) "wgmma.mma_async.sync.aligned." SHAPE_TYPES
DEFINE_WGMMA_OP(Wgmma_k16_f16_f16, WHEN_WGMMA(WGMMA_BODY_F16ACC(WG("m64n8k16.f16.f16.f16"), ", 0")))
DEFINE_WGMMA_OP(Wgmma_k16_f32_f16, WHEN_WGMMA(WGMMA_BODY_F32ACC(WG("m64n8k16.f32.f16.f16"), ", 0")))
DEFINE_WGMMA_OP(Wgmma_k16_f32_bf16, WHEN_WGMMA(WGMMA_BODY_F32ACC(WG("m64n8k16.f32.bf16.bf16"), ", 0")))
DEFINE_WGMMA_OP(Wgmma_k8_f32_tf32, WHEN_WGMMA(WGMMA_BODY_F32ACC(WG("m64n8k8.f32.tf32.tf32"), "")))

#define WG_FP8_F32(NAME, AT, BT) \
    DEFINE_WGMMA_OP(NAME, WHEN_WGMMA(WGMMA_BODY_F32ACC(WG("m64n8k32.f32." AT "." BT), "")))
#define WG_FP8_F16(NAME, AT, BT) \
    DEFINE_WGMMA_OP(NAME, WHEN_WGMMA(WGMMA_BODY_F16ACC(WG("m64n8k32.f16." AT "." BT), "")))
FP8_ALL_PAIRS(WG_FP8_F32, Wgmma_k32_f32)
FP8_ALL_PAIRS(WG_FP8_F16, Wgmma_k32_f16)

// ---- kernels --------------------------------------------------------------------------------
// One warp per tile (mma.sync), one 128-thread block per tile (wgmma); grid-stride loops.
// Register word w of thread s of tile t sits at image[(t * threads + s) * words + w].

template <class Op, int NA, int NB, int NC, int ND>
__global__ void mma_sync_kernel(KernelArgs args) {
    const unsigned lane = threadIdx.x & 31u;
    const uint64_t warps = ((uint64_t)gridDim.x * blockDim.x) >> 5;
    for (uint64_t t = ((uint64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; t < args.tiles;
         t += warps) {
        const uint64_t s = t * 32 + lane;
        uint32_t a[NA], b[NB], c[NC], d[ND];
#pragma unroll
        for (int i = 0; i < NA; ++i) a[i] = args.a[s * NA + i];
#pragma unroll
        for (int i = 0; i < NB; ++i) b[i] = args.b[s * NB + i];
#pragma unroll
        for (int i = 0; i < NC; ++i) c[i] = args.c[s * NC + i];
        if (!Op::run(a, b, c, d)) {
            if (lane == 0) atomicExch(args.status, STATUS_NOT_COMPILED);
            return;
        }
#pragma unroll
        for (int i = 0; i < ND; ++i) args.d[s * ND + i] = d[i];
        __syncwarp();
        if (lane == 0) args.done[t] = (uint32_t)t;
    }
}

// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): start address >> 4 in
// bits 0-13, leading-dimension byte offset >> 4 in bits 16-29 (128: the next 16 bytes of K),
// stride byte offset >> 4 in bits 32-45 (256: the next 8 rows of N, unused for N = 8), base
// offset 0, layout 0 (no swizzle).
__device__ __forceinline__ uint64_t shared_matrix_descriptor(const void* smem) {
    const uint32_t address = (uint32_t)__cvta_generic_to_shared(smem);
    return (uint64_t)((address >> 4) & 0x3FFFu) | ((uint64_t)(128u >> 4) << 16) |
           ((uint64_t)(256u >> 4) << 32);
}

__device__ __forceinline__ void fence_proxy_async_shared() {
#if DEVICE_WGMMA
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

template <class Op, int NA, int NC, int ND, int B_WORDS>
__global__ void __launch_bounds__(128) wgmma_kernel(KernelArgs args) {
    __shared__ __align__(256) uint32_t b_tile[B_WORDS];
    const unsigned s_in_tile = threadIdx.x;
    for (uint64_t t = blockIdx.x; t < args.tiles; t += gridDim.x) {
        __syncthreads();  // the previous tile's wgmma has completed (wait_group 0) everywhere
        for (unsigned w = s_in_tile; w < (unsigned)B_WORDS; w += blockDim.x)
            b_tile[w] = args.b[t * B_WORDS + w];
        fence_proxy_async_shared();  // generic-proxy stores -> visible to the async proxy
        __syncthreads();
        const uint64_t s = t * 128 + s_in_tile;
        uint32_t a[NA], c[NC], d[ND];
#pragma unroll
        for (int i = 0; i < NA; ++i) a[i] = args.a[s * NA + i];
#pragma unroll
        for (int i = 0; i < NC; ++i) c[i] = args.c[s * NC + i];
        if (!Op::run(a, shared_matrix_descriptor(b_tile), c, d)) {
            if (s_in_tile == 0) atomicExch(args.status, STATUS_NOT_COMPILED);
            return;
        }
#pragma unroll
        for (int i = 0; i < ND; ++i) args.d[s * ND + i] = d[i];
        __syncthreads();
        if (s_in_tile == 0) args.done[t] = (uint32_t)t;
    }
}

// ---- the instruction table ------------------------------------------------------------------

typedef cudaError_t (*Launcher)(const KernelArgs&, int sm_count);

template <class Op, int NA, int NB, int NC, int ND>
cudaError_t launch_mma_sync(const KernelArgs& args, int sm_count) {
    const int threads_per_block = 256;  // 8 warps, one tile each per step
    const uint64_t blocks_needed = (args.tiles + 7) / 8;
    const uint64_t blocks_max = (uint64_t)sm_count * 16;
    const unsigned blocks = (unsigned)(blocks_needed < blocks_max ? blocks_needed : blocks_max);
    mma_sync_kernel<Op, NA, NB, NC, ND><<<blocks, threads_per_block>>>(args);
    return cudaGetLastError();
}

template <class Op, int NA, int NC, int ND>
cudaError_t launch_wgmma(const KernelArgs& args, int sm_count) {
    const uint64_t blocks_max = (uint64_t)sm_count * 16;
    const unsigned blocks = (unsigned)(args.tiles < blocks_max ? args.tiles : blocks_max);
    wgmma_kernel<Op, NA, NC, ND, 64><<<blocks, 128>>>(args);
    return cudaGetLastError();
}

struct Entry {
    const char* name;         // the driver's catalogue name
    int threads;              // 32 or 128
    int a_words, b_words, c_words, d_words;
    int b_tile_bytes;
    bool compiled;            // host view of the device pass's guards
    Launcher launch;
};

#define MMA_ENTRY(NAME, OP, NA, NB, NC, ND, AVAILABLE) \
    {NAME, 32, NA, NB, NC, ND, 0, AVAILABLE, launch_mma_sync<OP, NA, NB, NC, ND>}
#define WGMMA_ENTRY(NAME, OP, NC, ND) \
    {NAME, 128, 4, 0, NC, ND, 256, HOST_WGMMA, launch_wgmma<OP, 4, NC, ND>}

static const Entry ENTRIES[] = {
    MMA_ENTRY("mma.m16n8k8.f16.f16.f16.f16", Mma_k8_f16_f16, 2, 1, 2, 2, HOST_SM80),
    MMA_ENTRY("mma.m16n8k8.f32.f16.f16.f32", Mma_k8_f32_f16, 2, 1, 4, 4, HOST_SM80),
    MMA_ENTRY("mma.m16n8k16.f16.f16.f16.f16", Mma_k16_f16_f16, 4, 2, 2, 2, HOST_SM80),
    MMA_ENTRY("mma.m16n8k16.f32.f16.f16.f32", Mma_k16_f32_f16, 4, 2, 4, 4, HOST_SM80),
    MMA_ENTRY("mma.m16n8k8.f32.bf16.bf16.f32", Mma_k8_f32_bf16, 2, 1, 4, 4, HOST_SM80),
    MMA_ENTRY("mma.m16n8k16.f32.bf16.bf16.f32", Mma_k16_f32_bf16, 4, 2, 4, 4, HOST_SM80),
    MMA_ENTRY("mma.m16n8k4.f32.tf32.tf32.f32", Mma_k4_f32_tf32, 2, 1, 4, 4, HOST_SM80),
    MMA_ENTRY("mma.m16n8k8.f32.tf32.tf32.f32", Mma_k8_f32_tf32, 4, 2, 4, 4, HOST_SM80),

#define FP8_ENTRIES(K, ACC, OPK, NA, NB, NC, AVAILABLE)                                      \
    MMA_ENTRY("mma.m16n8k" #K "." #ACC ".e4m3.e4m3." #ACC, OPK##_e4m3_e4m3, NA, NB, NC, NC, AVAILABLE), \
    MMA_ENTRY("mma.m16n8k" #K "." #ACC ".e4m3.e5m2." #ACC, OPK##_e4m3_e5m2, NA, NB, NC, NC, AVAILABLE), \
    MMA_ENTRY("mma.m16n8k" #K "." #ACC ".e5m2.e4m3." #ACC, OPK##_e5m2_e4m3, NA, NB, NC, NC, AVAILABLE), \
    MMA_ENTRY("mma.m16n8k" #K "." #ACC ".e5m2.e5m2." #ACC, OPK##_e5m2_e5m2, NA, NB, NC, NC, AVAILABLE)
    FP8_ENTRIES(16, f32, Mma_k16_f32, 2, 1, 4, HOST_FP8_NEW),
    FP8_ENTRIES(16, f16, Mma_k16_f16, 2, 1, 2, HOST_FP8_NEW),
    FP8_ENTRIES(32, f32, Mma_k32_f32, 4, 2, 4, HOST_FP8),
    FP8_ENTRIES(32, f16, Mma_k32_f16, 4, 2, 2, HOST_FP8_NEW),

    MMA_ENTRY("mma.m8n8k4.f64", Dmma_m8n8k4_f64, 2, 2, 4, 4, HOST_SM80),

    WGMMA_ENTRY("wgmma.m64n8k16.f16.f16.f16", Wgmma_k16_f16_f16, 2, 2),
    WGMMA_ENTRY("wgmma.m64n8k16.f32.f16.f16", Wgmma_k16_f32_f16, 4, 4),
    WGMMA_ENTRY("wgmma.m64n8k16.f32.bf16.bf16", Wgmma_k16_f32_bf16, 4, 4),
    WGMMA_ENTRY("wgmma.m64n8k8.f32.tf32.tf32", Wgmma_k8_f32_tf32, 4, 4),
#define WG_FP8_ENTRIES(ACC, OPK, NC)                                                         \
    WGMMA_ENTRY("wgmma.m64n8k32." #ACC ".e4m3.e4m3", OPK##_e4m3_e4m3, NC, NC),               \
    WGMMA_ENTRY("wgmma.m64n8k32." #ACC ".e4m3.e5m2", OPK##_e4m3_e5m2, NC, NC),               \
    WGMMA_ENTRY("wgmma.m64n8k32." #ACC ".e5m2.e4m3", OPK##_e5m2_e4m3, NC, NC),               \
    WGMMA_ENTRY("wgmma.m64n8k32." #ACC ".e5m2.e5m2", OPK##_e5m2_e5m2, NC, NC)
    WG_FP8_ENTRIES(f32, Wgmma_k32_f32, 4),
    WG_FP8_ENTRIES(f16, Wgmma_k32_f16, 2),
};

// ---- host utilities -------------------------------------------------------------------------

[[noreturn]] static void fail(int code, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("mmaprobe-harness: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(code);
}

#define CUDA_CHECK(call)                                                                     \
    do {                                                                                     \
        const cudaError_t err_ = (call);                                                     \
        if (err_ != cudaSuccess)                                                             \
            fail(3, "CUDA error in %s: %s (%s)", #call, cudaGetErrorName(err_),              \
                 cudaGetErrorString(err_));                                                  \
    } while (0)

static const Entry* find_entry(const char* name) {
    for (const Entry& e : ENTRIES)
        if (strcmp(e.name, name) == 0) return &e;
    return nullptr;
}

static void read_exact(FILE* f, void* dst, size_t bytes, const char* path, const char* what) {
    if (bytes && fread(dst, 1, bytes, f) != bytes)
        fail(2, "%s: truncated input (reading %s, %zu bytes)", path, what, bytes);
}

static void write_exact(FILE* f, const void* src, size_t bytes, const char* path) {
    if (bytes && fwrite(src, 1, bytes, f) != bytes)
        fail(2, "%s: cannot write output: %s", path, strerror(errno));
}

struct Batch {
    InputHeader header;
    const Entry* entry;
    std::vector<uint32_t> a, b, c;
};

static void check_header(const InputHeader& h, const Entry*& entry, const char* path) {
    if (memcmp(h.magic, INPUT_MAGIC, 8) != 0) fail(2, "%s: not an mmaprobe input file", path);
    if (h.version != PROTOCOL_VERSION)
        fail(2, "%s: protocol version %u, this harness speaks %u", path, h.version,
             PROTOCOL_VERSION);
    if (memchr(h.instruction, 0, sizeof h.instruction) == nullptr)
        fail(2, "%s: instruction name is not NUL-terminated", path);
    entry = find_entry(h.instruction);
    if (!entry) fail(2, "%s: unknown instruction '%s'", path, h.instruction);
    if (h.tiles == 0 || h.tiles > MAX_TILES)
        fail(2, "%s: tile count %llu outside 1..%llu", path, (unsigned long long)h.tiles,
             (unsigned long long)MAX_TILES);
    if ((int)h.threads != entry->threads || (int)h.a_words != entry->a_words ||
        (int)h.b_words != entry->b_words || (int)h.c_words != entry->c_words ||
        (int)h.d_words != entry->d_words || (int)h.b_tile_bytes != entry->b_tile_bytes)
        fail(2,
             "%s: register counts for %s disagree with this harness: file says threads %u "
             "a %u b %u c %u d %u b_tile_bytes %u, harness has %d %d %d %d %d %d",
             path, entry->name, h.threads, h.a_words, h.b_words, h.c_words, h.d_words,
             h.b_tile_bytes, entry->threads, entry->a_words, entry->b_words, entry->c_words,
             entry->d_words, entry->b_tile_bytes);
}

static Batch read_batch(const char* path) {
    FILE* f = fopen(path, "rb");
    if (!f) fail(2, "%s: cannot open input: %s", path, strerror(errno));
    Batch batch;
    read_exact(f, &batch.header, sizeof batch.header, path, "the header");
    check_header(batch.header, batch.entry, path);
    const InputHeader& h = batch.header;
    const size_t per_tile = h.threads;
    batch.a.resize(h.tiles * per_tile * h.a_words);
    batch.b.resize(h.tiles * (per_tile * h.b_words + h.b_tile_bytes / 4));
    batch.c.resize(h.tiles * per_tile * h.c_words);
    read_exact(f, batch.a.data(), batch.a.size() * 4, path, "the A image");
    read_exact(f, batch.b.data(), batch.b.size() * 4, path, "the B image");
    read_exact(f, batch.c.data(), batch.c.size() * 4, path, "the C image");
    char extra;
    if (fread(&extra, 1, 1, f) != 0) fail(2, "%s: trailing bytes after the C image", path);
    fclose(f);
    return batch;
}

static void require_device(int* sm_count) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
        fail(3, "no usable CUDA device: %s (%s)", cudaGetErrorName(err), cudaGetErrorString(err));
    if (count == 0) fail(3, "no CUDA device visible to this process");
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    const int arch = prop.major * 10 + prop.minor;
    if (arch != MMAPROBE_TARGET_ARCH)
        fail(3,
             "device 0 (%s) has compute capability %d.%d but this harness was built for "
             "sm_%d; check CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER",
             prop.name, prop.major, prop.minor, MMAPROBE_TARGET_ARCH);
    CUDA_CHECK(cudaSetDevice(0));
    *sm_count = prop.multiProcessorCount;
}

template <class T>
static T* device_copy(const std::vector<T>& host) {
    T* dev = nullptr;
    CUDA_CHECK(cudaMalloc(&dev, host.size() * sizeof(T) + sizeof(T)));
    if (!host.empty())
        CUDA_CHECK(cudaMemcpy(dev, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
    return dev;
}

static void write_output(const char* path, const Batch& batch, const std::vector<uint32_t>& d) {
    OutputHeader out;
    memset(&out, 0, sizeof out);
    memcpy(out.magic, OUTPUT_MAGIC, 8);
    out.version = PROTOCOL_VERSION;
    out.threads = batch.header.threads;
    out.tiles = batch.header.tiles;
    out.d_words = batch.header.d_words;
    memcpy(out.instruction, batch.header.instruction, sizeof out.instruction);
    FILE* f = fopen(path, "wb");
    if (!f) fail(2, "%s: cannot create output: %s", path, strerror(errno));
    write_exact(f, &out, sizeof out, path);
    write_exact(f, d.data(), d.size() * 4, path);
    if (fclose(f) != 0) fail(2, "%s: cannot write output: %s", path, strerror(errno));
}

static int command_run(const char* in_path, const char* out_path) {
    const Batch batch = read_batch(in_path);
    const InputHeader& h = batch.header;
    const Entry& entry = *batch.entry;
    if (!entry.compiled)
        fail(2, "%s is not in this build (built for sm_%d with nvcc %d.%d)", entry.name,
             MMAPROBE_TARGET_ARCH, __CUDACC_VER_MAJOR__, __CUDACC_VER_MINOR__);
    int sm_count = 0;
    require_device(&sm_count);

    const size_t d_count = h.tiles * h.threads * h.d_words;
    KernelArgs args;
    args.a = device_copy(batch.a);
    args.b = device_copy(batch.b);
    args.c = device_copy(batch.c);
    args.tiles = h.tiles;
    CUDA_CHECK(cudaMalloc(&args.d, d_count * 4));
    CUDA_CHECK(cudaMalloc(&args.done, h.tiles * 4));
    CUDA_CHECK(cudaMalloc(&args.status, sizeof(int)));
    CUDA_CHECK(cudaMemset(args.d, 0xFF, d_count * 4));        // poison: untouched = ~0
    CUDA_CHECK(cudaMemset(args.done, 0xFF, h.tiles * 4));
    CUDA_CHECK(cudaMemset(args.status, 0, sizeof(int)));

    CUDA_CHECK(entry.launch(args, sm_count));
    CUDA_CHECK(cudaDeviceSynchronize());

    std::vector<uint32_t> d(d_count, 0xFFFFFFFFu), done(h.tiles, 0xFFFFFFFFu);
    int status = -1;
    CUDA_CHECK(cudaMemcpy(d.data(), args.d, d_count * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(done.data(), args.done, h.tiles * 4, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(&status, args.status, sizeof(int), cudaMemcpyDeviceToHost));
    if (status == STATUS_NOT_COMPILED)
        fail(2, "%s: the device code for this instruction was compiled out for sm_%d",
             entry.name, MMAPROBE_TARGET_ARCH);
    if (status != STATUS_OK) fail(4, "%s: kernel status %d", entry.name, status);
    uint64_t untouched = 0;
    for (uint64_t t = 0; t < h.tiles; ++t) untouched += done[t] != (uint32_t)t;
    if (untouched)
        fail(4, "%s: %llu of %llu tiles were never stored by the GPU", entry.name,
             (unsigned long long)untouched, (unsigned long long)h.tiles);

    CUDA_CHECK(cudaFree((void*)args.a));
    CUDA_CHECK(cudaFree((void*)args.b));
    CUDA_CHECK(cudaFree((void*)args.c));
    CUDA_CHECK(cudaFree(args.d));
    CUDA_CHECK(cudaFree(args.done));
    CUDA_CHECK(cudaFree(args.status));
    write_output(out_path, batch, d);
    return 0;
}

static int command_list() {
    printf("# name threads a_words b_words c_words d_words b_tile_bytes compiled (sm_%d)\n",
           MMAPROBE_TARGET_ARCH);
    for (const Entry& e : ENTRIES)
        printf("%s %d %d %d %d %d %d %d\n", e.name, e.threads, e.a_words, e.b_words,
               e.c_words, e.d_words, e.b_tile_bytes, e.compiled ? 1 : 0);
    return 0;
}

static int command_info() {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    printf("built for sm_%d with nvcc %d.%d\n", MMAPROBE_TARGET_ARCH, __CUDACC_VER_MAJOR__,
           __CUDACC_VER_MINOR__);
    if (err != cudaSuccess)
        fail(3, "no usable CUDA device: %s (%s)", cudaGetErrorName(err), cudaGetErrorString(err));
    for (int i = 0; i < count; ++i) {
        cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDeviceProperties(&prop, i));
        printf("device %d: %s, compute capability %d.%d, %d SMs\n", i, prop.name, prop.major,
               prop.minor, prop.multiProcessorCount);
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "list") == 0) return command_list();
    if (argc == 2 && strcmp(argv[1], "info") == 0) return command_info();
    if (argc == 4 && strcmp(argv[1], "run") == 0) return command_run(argv[2], argv[3]);
    fail(2, "usage: %s list | info | run INPUT OUTPUT", argc ? argv[0] : "harness");
}
