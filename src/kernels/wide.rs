//! Element-wise kernels compiled for the widest vectors the CPU has, chosen at run time: the
//! [`wide!`] macro builds a function's body three times (AVX-512, AVX2 and the x86-64
//! baseline's SSE2) and calls the one of the SIMD level in use (`super::simd::level`: the
//! CPU's widest, or the lower one `FEDRUN_SIMD` names). The three run the same IEEE operations
//! in the same order (Rust never fuses a multiply and an add, nor reorders a sum, on its own),
//! so they give the same bits; only the width of the vectors the compiler picks differs.

/// `wide! { /// doc
///     fn name(arg: Type, ...) { body } }` defines `name`, whose `body` runs compiled for
/// AVX-512 or AVX2 as the SIMD level in use says (`simd::level`: the CPU's, or the lower one
/// `FEDRUN_SIMD` names), else for the baseline.
macro_rules! wide {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $body:block) => {
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) {
            #[inline(always)]
            fn body($($arg: $ty),*) $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                fn v4($($arg: $ty),*) {
                    body($($arg),*)
                }
                #[target_feature(enable = "avx2")]
                fn v3($($arg: $ty),*) {
                    body($($arg),*)
                }
                match $crate::kernels::simd::level() {
                    // SAFETY: the level in use is never above the CPU's (simd::level)
                    $crate::kernels::simd::Level::Avx512 => return unsafe { v4($($arg),*) },
                    // SAFETY: as above: the CPU has AVX2
                    $crate::kernels::simd::Level::Avx2 => return unsafe { v3($($arg),*) },
                    $crate::kernels::simd::Level::Sse2 => {}
                }
            }
            body($($arg),*)
        }
    };
}

pub(super) use wide;
