//! The x86 Linux guest's interrupt vectors the model sends and takes
//! (arch/x86/include/asm/irq_vectors.h, 6.12).

use super::Vector;

/// `RESCHEDULE_VECTOR`: `native_smp_send_reschedule`.
pub const RESCHEDULE_VECTOR: Vector = Vector(0xfd);
/// `CALL_FUNCTION_VECTOR`: `native_send_call_func_ipi` (a mask of CPUs).
pub const CALL_FUNCTION_VECTOR: Vector = Vector(0xfc);
/// `CALL_FUNCTION_SINGLE_VECTOR`: `native_send_call_func_single_ipi`.
pub const CALL_FUNCTION_SINGLE_VECTOR: Vector = Vector(0xfb);
/// `LOCAL_TIMER_VECTOR`: the LAPIC timer (the guest tick and hrtimers).
pub const LOCAL_TIMER_VECTOR: Vector = Vector(0xec);
