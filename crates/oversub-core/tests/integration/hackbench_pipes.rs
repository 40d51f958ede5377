//! `messaging` (hackbench -p -T) over the model of fs/pipe.c (`task::pipe`):
//! blocked writers are woken one at a time, and readers woken by the first
//! write into an empty pipe block long before it is full.

use oversub::scenario::Scenario;

fn run(src: &str) -> oversub::report::Report {
    let sc = Scenario::parse("hackbench.toml", src).unwrap();
    let mut sim = oversub::sim::Simulator::new(&sc);
    sim.set_check_invariants(true);
    sim.run_polled(sc.host.duration, &mut |_| true)
        .expect("the run finishes")
}

/// Sum of `f` over the tasks whose name contains `part`.
fn sum(r: &oversub::report::Report, part: &str, f: fn(&oversub::report::TaskReport) -> u64) -> u64 {
    r.tasks
        .iter()
        .filter(|t| t.name.contains(part))
        .map(f)
        .sum()
}

/// One CPU, 4 fast senders, 4 slow receivers, pipes of one page holding
/// one message: the senders fill the pipes and queue on them. Each read of
/// a full pipe wakes one writer (`wr_wait` is exclusive), which takes the
/// freed slot: the senders are woken about once per message read, not once
/// per waiting sender and message (a reader waking every blocked writer).
#[test]
fn a_read_of_a_full_pipe_wakes_one_writer() {
    for kernel in ["6.12.117", "6.18"] {
        let r = run(&format!(
            "[host]\ncpus = 1\nkernel = \"{kernel}\"\nduration = \"20ms\"\n\
             [[task]]\nname = \"hb\"\nkind = \"messaging\"\nfds = 4\nsend = \"1us\"\n\
             recv = \"20us\"\npipe_pages = 1\nmsg_size = 4096\n"
        ));
        let read = sum(&r, ".r", |t| t.cpu_ns) / 20_000;
        let woken = sum(&r, ".s", |t| t.nr_wakeups);
        assert!(read > 500, "{kernel}: {read} messages read");
        assert!(
            woken <= read + 8,
            "{kernel}: senders woken {woken} times for {read} messages read"
        );
    }
}

/// 6.12.117 wakes a writer at every read that began on a full pipe, 6.18
/// only at the read that frees a slot: under 6.12.117 a woken writer that
/// finds the pipe still full queues again and is woken by a later read.
#[test]
fn v6_18_wakes_a_writer_only_when_a_slot_is_freed() {
    let wakeups = |kernel: &str| {
        let r = run(&format!(
            "[host]\ncpus = 1\nkernel = \"{kernel}\"\nduration = \"20ms\"\n\
             [[task]]\nname = \"hb\"\nkind = \"messaging\"\nfds = 4\nsend = \"1us\"\n\
             recv = \"5us\"\npipe_pages = 2\nmsg_size = 100\n"
        ));
        let read = sum(&r, ".r", |t| t.cpu_ns) / 5_000;
        (sum(&r, ".s", |t| t.nr_wakeups), read)
    };
    let (w12, read12) = wakeups("6.12.117");
    let (w18, read18) = wakeups("6.18");
    assert!(read12 > 2000 && read18 > 2000, "{read12} {read18}");
    // 6.18: at most one wakeup per page read (40 messages).
    assert!(
        w18 * 40 <= read18 + 40 * 8,
        "6.18: {w18} wakeups for {read18} messages"
    );
    // 6.12.117: the wakeups that find the pipe still full come on top.
    assert!(2 * w12 > 3 * w18, "6.12.117: {w12} wakeups, 6.18: {w18}");
}

/// hackbench -p -T -g 2 -f 10 on 2 CPUs (the eevdf-latency section's
/// load): a receiver is woken by the first write into its empty pipe and
/// runs while its pipe is far from full (16 pages of 40 messages), so it
/// blocks many times per pipeful; senders rarely find a pipe full.
#[test]
fn hackbench_receivers_block_well_before_their_pipe_fills() {
    let r = run(
        "[host]\ncpus = 2\nhz = 250\nkernel = \"6.18\"\nduration = \"300ms\"\n\
         [[task]]\nname = \"hb\"\nkind = \"messaging\"\ncount = 2\nfds = 10\n\
         send = \"500ns\"\nrecv = \"500ns\"\n",
    );
    let read = sum(&r, ".r", |t| t.cpu_ns) / 500;
    let blocks = sum(&r, ".r", |t| t.nr_voluntary_switches);
    assert!(read > 100_000, "{read} messages read");
    assert!(
        blocks * 160 > read,
        "receivers blocked {blocks} times for {read} messages (a pipe holds 640)"
    );
}
