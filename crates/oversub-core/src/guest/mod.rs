//! Guest-side models: lock implementations as pure state machines
//! (`spinlock`, the sleeping locks' `osq`, the wakeup path's locks
//! `wakeup`), the cpuidle-haltpoll governor (`haltpoll`) and named
//! workload profiles (`workload`).

pub mod haltpoll;
pub mod machine;
pub mod osq;
pub mod spinlock;
pub mod wakeup;
pub mod workload;
