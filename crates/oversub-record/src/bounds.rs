//! The bounds and thresholds the layers share, at the bottom so that no
//! layer reaches up for them: what `oversub derive` reads from a
//! profile.json (the histograms' and the profile's readers both hold to
//! them), and the CPU share below which the derivation leaves a thread out
//! (profile.json lists every thread above it).

/// The largest count `oversub derive` reads from a profile.json (events,
/// wakeups, syscalls of one kind): 2^36, far above what a recording of at
/// most 600 s and its event cap hold, and low enough that the derivation's
/// sums and products of counts cannot overflow.
pub const MAX_PROFILE_COUNT: u64 = 1 << 36;
/// The largest CPU time or blocked-time sum (ns) read: 2^50 ns (13 days).
pub const MAX_PROFILE_NS: u64 = 1 << 50;
/// Most `woken_by` and `wakes` entries of one thread read.
pub const MAX_PROFILE_PEERS: usize = 8192;
/// A thread below this share of the program's CPU time is left out.
pub const MIN_CPU_SHARE: f64 = 0.005;
