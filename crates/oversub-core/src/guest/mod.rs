//! Guest-side models: lock implementations as pure state machines
//! (`spinlock`, the sleeping locks' `osq`, the wakeup path's locks
//! `wakeup`), the TLB flush targets of `mm_cpumask` (`tlb`), the
//! cpuidle-haltpoll governor (`haltpoll`) and named
//! workload profiles (`workload`).

pub mod haltpoll;
pub mod machine;
pub mod osq;
pub mod spinlock;
pub mod tlb;
pub mod wakeup;
pub mod workload;
