//! Guest-side models: lock implementations as pure state machines
//! (`spinlock`) and named workload profiles (`workload`).

pub mod machine;
pub mod spinlock;
pub mod workload;
