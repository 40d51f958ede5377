//! The discrete-event engine: virtual time, the event queue and the seeded RNG.
//!
//! Nothing here knows about scheduling; `sim` drives the models through it.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::{EventId, EventQueue};
pub use rng::SimRng;
pub use time::{Nanos, Time};
