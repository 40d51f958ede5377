//! Printing to standard output through [`crate::output::stdout_fmt`]: the
//! first error (a closed pipe, a full disk) is kept for the exit code,
//! never a panic and never exit 0 with the output lost.

/// `print!` through [`crate::output::stdout_fmt`].
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {{
        $crate::output::stdout_fmt(format_args!($($t)*));
    }};
}

/// `println!` through [`crate::output::stdout_fmt`].
#[macro_export]
macro_rules! outln {
    ($($t:tt)*) => {{
        $crate::output::stdout_fmt(format_args!("{}\n", format_args!($($t)*)));
    }};
}
