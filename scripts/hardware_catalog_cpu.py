"""CPU figures of the hardware catalog (``scripts/build_hardware_catalog.py``): the processor behind each CPU row
(FP32 and int8 dot-product rates, llama.cpp's thread count) and a SoC's CPU cluster (the bandwidth it reaches, its
FP32 rate and threads). Each value is a formula with its basis; the build writes the basis into ``derived``.
"""

from __future__ import annotations

# CPU memory systems have no processor in the reference table: a FLOP/s figure needs one. ASSUMED
# representative processor per row: cores x FP32 FLOPs per cycle per core (SIMD FMA units x lanes x 2) x
# clock (desktop: all-core boost; server: base clock, what all-core AVX-512 load sustains).
CPU_FLOPS = {
    "ddr4-3200-2ch": (8, 32, 4.4, "8-core Zen 3 desktop (Ryzen 7 5800X): 2 x 256-bit FMA = 32 FLOPs/cycle, 4.4 GHz all-core"),
    "ddr5-4800-2ch": (8, 32, 4.5, "8-core Zen 4 desktop (Ryzen 7 7700X): AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle, 4.5 GHz all-core"),
    "ddr5-5600-2ch": (8, 32, 4.5, "8-core Zen 4 desktop (Ryzen 7 7700X): AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle, 4.5 GHz all-core"),
    "ddr5-6000-2ch": (8, 32, 4.5, "8-core Zen 4 desktop (Ryzen 7 7700X): AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle, 4.5 GHz all-core"),
    "ddr5-6400-2ch": (8, 32, 4.5, "8-core Zen 4 desktop (Ryzen 7 7700X): AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle, 4.5 GHz all-core"),
    "xeon-spr-ddr5-4800-8ch": (56, 64, 2.0, "Xeon Platinum 8480+ (56 cores): 2 x AVX-512 FMA = 64 FLOPs/cycle, 2.0 GHz base; "
                                            "its AMX BF16 tiles (1024 FLOPs/cycle/core) are not counted"),
    "xeon-6900p-ddr5-6400-12ch": (128, 64, 2.0, "Xeon 6980P (128 cores): 2 x AVX-512 FMA = 64 FLOPs/cycle, 2.0 GHz base; AMX not counted"),
    "xeon-6900p-mrdimm-8800-12ch": (128, 64, 2.0, "Xeon 6980P (128 cores): 2 x AVX-512 FMA = 64 FLOPs/cycle, 2.0 GHz base; AMX not counted"),
    "epyc-genoa-ddr5-4800-12ch": (96, 32, 2.4, "EPYC 9654 (96 Zen 4 cores): AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle, 2.4 GHz base"),
    "epyc-turin-ddr5-6000-12ch": (128, 64, 2.7, "EPYC 9755 (128 Zen 5 cores): 2 x 512-bit FMA = 64 FLOPs/cycle, 2.7 GHz base"),
    "grace-lpddr5x": (72, 32, 3.1, "Grace (72 Neoverse V2 cores): 4 x 128-bit SVE2 FMA = 32 FLOPs/cycle, 3.1 GHz "
                                   "(72 x 16 FP64 x 3.1 = 3.57 TF = half of NVIDIA's 7.1 TF FP64 per 144-core superchip)"),
}

# CPU rows that name their processor (vendor data sheets): cores x FP32 FLOPs per cycle per core x clock (base clock:
# what an all-core AVX load sustains on a server; a desktop part's base as the floor of its all-core clock).
CPU_NAMED = {
    "epyc-9274f": (24, 32, 4.05, "AMD EPYC 9274F: 24 Zen 4 cores, AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle, 4.05 GHz base"),
    "epyc-9374f": (32, 32, 3.85, "AMD EPYC 9374F: 32 Zen 4 cores, AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle, 3.85 GHz base"),
    "epyc-9355": (32, 64, 3.55, "AMD EPYC 9355: 32 Zen 5 cores, 2 x 512-bit FMA = 64 FLOPs/cycle, 3.55 GHz base"),
    "epyc-9755": (128, 64, 2.7, "AMD EPYC 9755: 128 Zen 5 cores, 2 x 512-bit FMA = 64 FLOPs/cycle, 2.7 GHz base"),
    "epyc-9965": (192, 64, 2.25, "AMD EPYC 9965: 192 Zen 5c cores (the server Zen 5c keeps the 512-bit datapath), "
                                 "2 x 512-bit FMA = 64 FLOPs/cycle, 2.25 GHz base"),
    "ryzen-9-7950x": (16, 32, 4.5, "AMD Ryzen 9 7950X: 16 Zen 4 cores, AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle, "
                                   "4.5 GHz base (all-core load runs higher)"),
    "xeon-gold-6138-2s": (40, 64, 2.0, "2 x Intel Xeon Gold 6138: 2 x 20 Skylake-SP cores, 2 AVX-512 FMA units = 64 "
                                       "FLOPs/cycle, 2.0 GHz base (AVX-512 clocks run lower)"),
    "raspberry-pi-5": (4, 16, 2.4, "Broadcom BCM2712: 4 Arm Cortex-A76 cores, 2 x 128-bit NEON FMA = 16 FLOPs/cycle, "
                                   "2.4 GHz"),
    "ryzen-9-9950x": (16, 64, 4.3, "AMD Ryzen 9 9950X: 16 Zen 5 cores, 2 x 512-bit FMA = 64 FLOPs/cycle, 4.3 GHz base"),
    "ryzen-7-9800x3d": (8, 64, 4.7, "AMD Ryzen 7 9800X3D: 8 Zen 5 cores, 2 x 512-bit FMA = 64 FLOPs/cycle, 4.7 GHz base"),
    "threadripper-pro-5975wx": (32, 32, 3.6, "AMD Threadripper PRO 5975WX: 32 Zen 3 cores, 2 x 256-bit FMA = 32 "
                                            "FLOPs/cycle, 3.6 GHz base"),
    "threadripper-pro-7995wx": (96, 32, 2.5, "AMD Threadripper PRO 7995WX: 96 Zen 4 cores, AVX-512 on 2 x 256-bit FMA "
                                            "= 32 FLOPs/cycle, 2.5 GHz base"),
    "xeon-w9-3495x": (56, 64, 1.9, "Intel Xeon w9-3495X: 56 Golden Cove cores, 2 x AVX-512 FMA = 64 FLOPs/cycle, "
                                   "1.9 GHz base; its AMX tiles not counted"),
    "ampere-altra-q80-30": (80, 16, 3.0, "Ampere Altra Q80-30: 80 Neoverse N1 cores, 2 x 128-bit NEON FMA = 16 "
                                         "FLOPs/cycle, 3.0 GHz"),
    "graviton4": (96, 32, 2.8, "AWS Graviton4: 96 Neoverse V2 cores, 4 x 128-bit SVE2/NEON FMA = 32 FLOPs/cycle, "
                               "2.8 GHz"),
}

# Multi-socket CPU rows (one catalog device for the whole machine): the sockets, each with its own memory channels.
# llama.cpp reads its weights through mmap, so they sit in the page cache on the NUMA node that first read the file;
# without ``--numa`` (its default; common/arg.cpp: "distribute: spread execution evenly over all nodes ... it is
# recommended to drop the system page cache before using this") every thread streams them from that one socket's
# memory, the other socket's over its inter-socket link: the bandwidth a CPU engine reaches is one socket's.
CPU_SOCKETS = {"xeon-gold-6138-2s": 2}
NUMA_BASIS = ("one of {n} sockets' memory: llama.cpp's mmap'd weights sit on the NUMA node that read the file, and "
              "without --numa (its default) every thread streams them from there (common/arg.cpp --numa help; "
              "ASSUMED: no row measures both settings)")

# Int8 dot products per FP32 FLOP of each row's ASSUMED processor (llama.cpp's CPU matrix-vector kernels
# over quantized weights run on them): AVX-512 VNNI / AVX-VNNI vpdpbusd and Arm sdot do 4 int8
# multiply-adds per 32-bit lane in one instruction (4 x the FP32 FMA rate in ops); AVX2 needs vpmaddubsw +
# vpmaddwd for the same (2 x). Rows not listed keep int8_tops 0, read as AVX2's 2 x (Hardware.cpu_int8_ops).
CPU_INT8_PER_FP32 = {
    "ddr5-4800-2ch": (4, "Zen 4 AVX-512 VNNI vpdpbusd"), "ddr5-5600-2ch": (4, "Zen 4 AVX-512 VNNI vpdpbusd"),
    "ddr5-6000-2ch": (4, "Zen 4 AVX-512 VNNI vpdpbusd"), "ddr5-6400-2ch": (4, "Zen 4 AVX-512 VNNI vpdpbusd"),
    "xeon-spr-ddr5-4800-8ch": (4, "AVX-512 VNNI vpdpbusd (AMX not counted)"),
    "xeon-6900p-ddr5-6400-12ch": (4, "AVX-512 VNNI vpdpbusd (AMX not counted)"),
    "xeon-6900p-mrdimm-8800-12ch": (4, "AVX-512 VNNI vpdpbusd (AMX not counted)"),
    "epyc-genoa-ddr5-4800-12ch": (4, "Zen 4 AVX-512 VNNI vpdpbusd"),
    "epyc-turin-ddr5-6000-12ch": (4, "Zen 5 AVX-512 VNNI vpdpbusd"),
    **{i: (4, "Zen 4 AVX-512 VNNI vpdpbusd") for i in ("epyc-9274f", "epyc-9374f", "ryzen-9-7950x")},
    **{i: (4, "Zen 5 AVX-512 VNNI vpdpbusd") for i in ("epyc-9355", "epyc-9755", "epyc-9965")},
    "raspberry-pi-5": (4, "Cortex-A76 sdot (Armv8.2 dot product)"),
    **{i: (4, "Zen 5 AVX-512 VNNI vpdpbusd") for i in ("ryzen-9-9950x", "ryzen-7-9800x3d")},
    "threadripper-pro-7995wx": (4, "Zen 4 AVX-512 VNNI vpdpbusd"),
    "xeon-w9-3495x": (4, "AVX-512 VNNI vpdpbusd (AMX not counted)"),
    "ampere-altra-q80-30": (4, "Neoverse N1 sdot (Armv8.2 dot product)"),
    "graviton4": (4, "Neoverse V2 sdot (i8mm's smmla, 8x, serves prompt GEMMs, not the matrix-vector kernels)"),
    "grace-lpddr5x": (4, "Neoverse V2 sdot (i8mm's smmla, 8x, serves prompt GEMMs, not the matrix-vector kernels)"),
}


# ---- what a SoC's CPU cluster can pull (#11 item 3) ------------------------------------------------------
# On a unified-memory SoC the GPU reaches (most of) the memory bandwidth; the CPU cores cannot: their
# fabric port and outstanding misses limit them. cpu_bandwidth_gbps is the read bandwidth all CPU cores
# reach together; cpu_bandwidth_band_pct is its uncertainty (measured: 15 %, assumed: 40 %).
# [ANANDTECH-M1] AnandTech, "The 2020 Mac mini Unleashed: Putting Apple Silicon M1 To The Test" (Nov 2020):
#   one Firestorm core reads ~58 GB/s, the cluster ~60 GB/s of 68.25.
# [ANANDTECH-M1MAX] AnandTech, "Apple's M1 Pro, M1 Max SoCs Investigated" (Oct 2021): the CPU cores of an
#   M1 Max reach ~224 GB/s (up to ~243 mixed) of 409.6; only the GPU approaches the rest.
CITES = {"[ANANDTECH-M1MAX]": "(AnandTech, \"Apple's M1 Pro, M1 Max SoCs Investigated\", Oct 2021)",
         "[ANANDTECH-M1]": "(AnandTech, \"The 2020 Mac mini Unleashed: Putting Apple Silicon M1 To The Test\", Nov 2020)"}
APPLE_CPU_SHARE = {
    # tier: (CPU-cluster share of peak, band %, basis)
    "": (60 / 68.25, 15, "[ANANDTECH-M1] measured M1 CPU cluster ~60 of 68.25 GB/s = 0.879 of peak; same share "
                         "ASSUMED for later base chips (one CPU cluster on a 128-bit bus)"),
    "Pro": (0.85, 40, "ASSUMED 0.85 of peak: a Pro's CPU clusters equal a Max's ([ANANDTECH-M1MAX] ~224 GB/s), "
                      "more than a Pro's 150-273 GB/s bus, so they come near it; no public measurement at hand"),
    "Max": (224 / 409.6, 15, "[ANANDTECH-M1MAX] measured M1 Max CPU cores ~224 of 409.6 GB/s = 0.547 of peak; same "
                             "share ASSUMED for M2/M3/M4 Max"),
    "Ultra": (224 / 409.6, 40, "ASSUMED the Max share (two Max dies, each CPU cluster reading at the Max rate "
                               "[ANANDTECH-M1MAX]); no public Ultra measurement at hand"),
}
SOC_CPU = {
    # Strix Halo: the two Zen 5 CCDs reach memory over one GMI link each, 32 B/clock read at FCLK 2.0 GHz
    "ryzen-ai-max-395": (2 * 32 * 2.0, 40, "DERIVED 2 CCDs x 32 B/clock GMI read x 2.0 GHz FCLK (ASSUMED FCLK) = 128 GB/s"),
    "dgx-spark": (224 / 409.6 * 273, 40, "ASSUMED the M1 Max CPU share 0.547 [ANANDTECH-M1MAX] x 273 GB/s: no public "
                                        "GB10 CPU-bandwidth figure at hand"),
    "jetson-agx-orin-64g": (224 / 409.6 * 204.8, 40, "ASSUMED the M1 Max CPU share 0.547 [ANANDTECH-M1MAX] x 204.8 GB/s: "
                                                      "no public Orin CPU-bandwidth figure at hand"),
    # Phoenix (Radeon 780M): one Zen 4 CCX reads over one fabric port, 32 B/clock at FCLK 2.0 GHz, as Strix Halo's CCDs
    "radeon-780m": (32 * 2.0, 40, "DERIVED 1 CCX x 32 B/clock fabric read x 2.0 GHz FCLK (ASSUMED FCLK) = 64 GB/s"),
    "core-ultra-7-258v": (60 / 68.25 * 136.5, 40, "ASSUMED the M1 CPU-cluster share 0.879 [ANANDTECH-M1] (one CPU "
                                                  "complex on a 128-bit on-package bus): no public Lunar Lake figure at hand"),
    "jetson-orin-nano-super": (224 / 409.6 * 102, 40, "ASSUMED the M1 Max CPU share 0.547 [ANANDTECH-M1MAX] x 102 GB/s: "
                                                      "no public Orin Nano CPU-bandwidth figure at hand"),
}

# A SoC's CPU FLOP/s (what llama.cpp-cpu computes with there): performance cores x FP32 FLOPs per cycle x
# clock. Apple P-cores (Firestorm and later) have 4 x 128-bit FMA pipes = 32 FP32 FLOPs/cycle; E-cores are
# not counted: llama.cpp's default thread count on Apple silicon is the P-core count
# (common.cpp cpu_get_num_math: sysctl hw.perflevel0.physicalcpu). P-core counts and maximum clocks from
# Apple's tech-spec pages for the configuration with that GPU (binned GPUs ship with the smaller CPU).
APPLE_P_CORES = {  # (chip, GPU cores or None for any) -> P-cores
    ("M1", None): 4, ("M1 Pro", 14): 6, ("M1 Pro", None): 8, ("M1 Max", None): 8, ("M1 Ultra", None): 16,
    ("M2", None): 4, ("M2 Pro", 16): 6, ("M2 Pro", None): 8, ("M2 Max", None): 8, ("M2 Ultra", None): 16,
    ("M3", None): 4, ("M3 Pro", None): 6, ("M3 Max", 30): 10, ("M3 Max", 40): 12, ("M3 Ultra", None): 24,
    ("M4", None): 4, ("M4 Pro", 16): 8, ("M4 Pro", None): 10, ("M4 Max", 32): 10, ("M4 Max", 40): 12,
    ("M3 Ultra", 60): 20, ("M5", None): 4,
}
APPLE_P_GHZ = {"M1": 3.2, "M2": 3.5, "M3": 4.05, "M4": 4.5, "M5": 4.5}
APPLE_P_GHZ_BASIS = {"M5": "ASSUMED the M4's clock: no M5 P-core clock at hand"}
SOC_CPU_FLOPS = {  # id: (cores, FP32 FLOPs/cycle, GHz, basis)
    "core-ultra-7-258v": (4, 32, 4.8, "4 Lion Cove P-cores, ASSUMED 2 x 256-bit FMA = 32 FLOPs/cycle at the 4.8 GHz maximum "
                                      "turbo (an upper bound); the 4 Skymont LP E-cores not counted"),
    "radeon-780m": (8, 32, 3.3, "8 Zen 4 cores, AVX-512 on 2 x 256-bit FMA = 32 FLOPs/cycle at the Ryzen 7 7840U's "
                                "3.3 GHz base (ASSUMED the all-core floor; the HS parts run higher)"),
    "ryzen-ai-max-395": (16, 32, 4.0, "16 Zen 5 cores, ASSUMED 2 x 256-bit FMA = 32 FLOPs/cycle at an ASSUMED 4.0 GHz all-core"),
    "dgx-spark": (10, 48, 3.9, "10 Cortex-X925 cores (6 x 128-bit FMA = 48 FLOPs/cycle) at 3.9 GHz; the 10 A725 not counted"),
    "jetson-agx-orin-64g": (12, 16, 2.2, "12 Cortex-A78AE cores (2 x 128-bit FMA = 16 FLOPs/cycle) at 2.2 GHz"),
    "jetson-orin-nano-super": (6, 16, 1.7, "6 Cortex-A78AE cores (2 x 128-bit FMA = 16 FLOPs/cycle) at 1.7 GHz"),
}

# llama.cpp's default thread count (common/common.cpp cpu_get_num_math): the physical cores, without
# Intel hybrid E-cores; on Apple silicon the performance cores (sysctl hw.perflevel0.physicalcpu); on Arm
# Linux every physical core.
LLAMA_THREADS = "llama.cpp's default thread count: physical cores, P-cores on Apple silicon"
SOC_CPU_THREADS = {  # id: (threads, which cores)
    "core-ultra-7-258v": (4, "4 Lion Cove P-cores (Intel hybrid: E-cores not counted)"),
    "radeon-780m": (8, "8 Zen 4 cores"),
    "ryzen-ai-max-395": (16, "16 Zen 5 cores"),
    "dgx-spark": (20, "10 Cortex-X925 + 10 Cortex-A725 (Arm Linux: every physical core)"),
    "jetson-agx-orin-64g": (12, "12 Cortex-A78AE cores"),
    "jetson-orin-nano-super": (6, "6 Cortex-A78AE cores"),
}
