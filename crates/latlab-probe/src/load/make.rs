//! `make:N`: a kernel-build-like CPU and page-cache load. Generates a C source tree (60 files of
//! ~400 lines of loops, switches and struct arithmetic, a header and a Makefile) and runs
//! `make -jN`, removes the objects and builds again until stopped. Counters: `builds` (whole
//! builds linked) and `objects` (object files compiled, so a run shorter than one build shows work).
//! The load is ready (the probe starts measuring) once the first object file is out, when the
//! compilers are running rather than make reading its Makefile.
//! Without `cc` or `make` on PATH it forks N busy-loop processes instead (counter
//! `cpu_loops`, one per ~10^6 square roots) and leaves a note saying so.

use super::counters::Counters;
use std::fmt::Write as _;
use std::io;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Shape of the generated source tree.
#[derive(Clone, Copy, Debug)]
pub struct Tree {
    /// Number of `.c` files besides `main.c`.
    pub files: usize,
    /// Functions per file (~35 lines each).
    pub funcs: usize,
}

/// The tree the load builds: 60 files of 12 functions, ~25k lines in all.
pub const FULL: Tree = Tree { files: 60, funcs: 12 };

/// The `make:N` load: builds in a loop, or busy loops without a toolchain.
pub fn run(dir: &Path, stop: &AtomicBool, counters: &Counters, jobs: u32) -> io::Result<()> {
    if on_path("cc") && on_path("make") {
        build_loop(dir, stop, counters, jobs, FULL)
    } else {
        counters.note(&format!("no C compiler or make on PATH, ran {jobs} CPU loops instead"));
        cpu_loops(stop, counters, jobs)
    }
}

/// True if an executable `name` is on PATH.
pub fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p)
            .any(|d| std::fs::metadata(d.join(name)).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0))
    })
}

/// Generate `tree` under `dir`, then `make -j<jobs>` and clean until `stop`.
pub fn build_loop(dir: &Path, stop: &AtomicBool, counters: &Counters, jobs: u32, tree: Tree) -> io::Result<()> {
    counters.add("builds", 0);
    counters.add("objects", 0);
    let mut objects_before = 0u64;
    let src = dir.join("src");
    generate(&src, tree)?;
    while !stop.load(Ordering::Relaxed) {
        let mut make = Command::new("make")
            .arg(format!("-j{jobs}"))
            .arg("-s")
            .current_dir(&src)
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .env_remove("MAKELEVEL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()?;
        let status = loop {
            let objects = objects_before + count_objects(&src);
            counters.set("objects", objects);
            if objects > 0 {
                // The compilers are running once the first object is out: before that, the
                // load is make reading its Makefile and one cc starting, not a build's load.
                counters.ready();
            }
            if let Some(s) = make.try_wait()? {
                break Some(s);
            }
            if stop.load(Ordering::Relaxed) {
                // GNU make passes SIGTERM on to the compilers it runs, then exits.
                // SAFETY: kill(2) on our own child, which is not yet reaped.
                unsafe { libc::kill(make.id() as libc::pid_t, libc::SIGTERM) };
                make.wait()?;
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        match status {
            Some(s) if s.success() => counters.add("builds", 1),
            Some(s) if !stop_follows(stop) => {
                return Err(io::Error::other(format!("make -j{jobs} failed: {s}")));
            }
            _ => {}
        }
        objects_before += count_objects(&src);
        counters.set("objects", objects_before);
        clean(&src)?;
    }
    let _ = std::fs::remove_dir_all(&src);
    Ok(())
}

/// Whether a make that just failed was being stopped: the parent's SIGTERM goes to the
/// whole process group, so make or its compilers may die of it before this process's own
/// handler has set `stop`. A failure with no stop within a second is a real one.
fn stop_follows(stop: &AtomicBool) -> bool {
    let t0 = std::time::Instant::now();
    loop {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        if t0.elapsed() >= Duration::from_secs(1) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Object files currently in `src` (a vanished directory counts as none).
fn count_objects(src: &Path) -> u64 {
    std::fs::read_dir(src).map_or(0, |rd| {
        rd.filter_map(Result::ok)
            .filter(|e| e.path().extension().is_some_and(|x| x == "o"))
            .count() as u64
    })
}

/// Remove the build products (`make clean`).
fn clean(src: &Path) -> io::Result<()> {
    for e in std::fs::read_dir(src)? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "o") || p.file_name().is_some_and(|n| n == "prog") {
            std::fs::remove_file(p)?;
        }
    }
    Ok(())
}

/// Write the sources, header and Makefile of `tree` into `src`.
fn generate(src: &Path, tree: Tree) -> io::Result<()> {
    std::fs::create_dir_all(src)?;
    let mut h = String::from(
        "#ifndef COMMON_H\n#define COMMON_H\n\
         struct cell { unsigned long a; double b; int tag; };\n\
         static inline unsigned long rotl(unsigned long x, int r) { return (x << r) | (x >> (64 - r)); }\n\
         static inline unsigned long mix(unsigned long a, unsigned long b)\n{\n\
         \ta ^= b + 0x9e3779b97f4a7c15UL + (a << 6) + (a >> 2);\n\treturn a * 0xff51afd7ed558ccdUL;\n}\n",
    );
    for i in 0..tree.files {
        let _ = writeln!(h, "unsigned long mod{i:03}_entry(unsigned long x);");
    }
    h.push_str("#endif\n");
    std::fs::write(src.join("common.h"), h)?;

    let mut seed = 0x853c_49e6_748f_ea9bu64;
    let mut rnd = move |m: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % m + 1
    };
    for i in 0..tree.files {
        let mut c = String::from("#include \"common.h\"\n\n");
        for j in 0..tree.funcs {
            let (c0, c1, c2, c3, c4, c5) = (
                rnd(1 << 30),
                rnd(1 << 20),
                rnd(97),
                rnd(1 << 16),
                rnd(255),
                rnd(1 << 12),
            );
            let (s, r, d, d2) = (rnd(40), rnd(62), rnd(1000), rnd(500) + 1);
            let prev = match j {
                0 => String::new(),
                _ => format!("\tacc ^= f{i}_{}(acc, buf, n / 2 + 1);\n", j - 1),
            };
            let _ = write!(
                c,
                "static unsigned long f{i}_{j}(unsigned long x, const unsigned char *buf, int n)\n{{\n\
                 \tunsigned long acc = x ^ {c0}UL;\n\tstruct cell c[16];\n\tint k, m;\n\n\
                 \tfor (k = 0; k < 16; k++) {{\n\t\tc[k].a = acc + k * {c1}UL;\n\
                 \t\tc[k].b = (double)(acc >> (k & 31)) * {d}.0;\n\t\tc[k].tag = (k * {c2}) & 7;\n\t}}\n\
                 \tfor (k = 0; k < n; k++) {{\n\t\tacc = acc * 6364136223846793005UL + buf[k & 63] + {c3}UL;\n\
                 \t\tswitch ((acc >> {s}) & 7) {{\n\
                 \t\tcase 0: acc ^= acc >> 13; break;\n\
                 \t\tcase 1: acc += (acc << 3) | {c4}UL; break;\n\
                 \t\tcase 2: acc = rotl(acc, {r}); break;\n\
                 \t\tcase 3: c[k & 15].a ^= acc; break;\n\
                 \t\tcase 4: c[k & 15].b += (double)(acc & 0xffff) / {d2}.0; break;\n\
                 \t\tcase 5: acc -= (unsigned long)k * {c5}UL; break;\n\
                 \t\tcase 6: acc ^= mix(acc, c[(k + 3) & 15].a); break;\n\
                 \t\tdefault: acc += c[k & 15].tag; break;\n\t\t}}\n\
                 \t\tfor (m = 0; m < 4; m++)\n\t\t\tacc += (acc >> (m + 5)) ^ buf[(k + m) & 63];\n\t}}\n\
                 \tfor (k = 0; k < 16; k++)\n\t\tacc += c[k].a + (unsigned long)c[k].b + c[k].tag;\n\
                 {prev}\treturn acc;\n}}\n\n"
            );
        }
        let last = tree.funcs.saturating_sub(1);
        let _ = write!(
            c,
            "unsigned long mod{i:03}_entry(unsigned long x)\n{{\n\tunsigned char buf[64];\n\tint k;\n\n\
             \tfor (k = 0; k < 64; k++)\n\t\tbuf[k] = (unsigned char)((x >> (k & 7)) + k);\n\
             \treturn f{i}_{last}(x, buf, 32) ^ f{i}_0(x + 1, buf, 16);\n}}\n"
        );
        std::fs::write(src.join(format!("m{i:03}.c")), c)?;
    }
    let mut main =
        String::from("#include <stdio.h>\n#include \"common.h\"\n\nint main(void)\n{\n\tunsigned long s = 1;\n\n");
    for i in 0..tree.files {
        let _ = writeln!(main, "\ts ^= mod{i:03}_entry(s + {i});");
    }
    main.push_str("\tprintf(\"%lu\\n\", s);\n\treturn 0;\n}\n");
    std::fs::write(src.join("main.c"), main)?;

    let objs: Vec<String> = (0..tree.files).map(|i| format!("m{i:03}.o")).collect();
    let mk = format!(
        "CFLAGS = -O2 -w\nOBJS = main.o {}\n\nprog: $(OBJS)\n\t$(CC) -o $@ $(OBJS)\n\n\
         %.o: %.c common.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n",
        objs.join(" ")
    );
    std::fs::write(src.join("Makefile"), mk)
}

/// Fork `n` busy-looping processes and count their loops until `stop`, then kill them.
pub fn cpu_loops(stop: &AtomicBool, counters: &Counters, n: u32) -> io::Result<()> {
    counters.add("cpu_loops", 0);
    // One cache line per process, shared across fork.
    let len = n as usize * 64;
    // SAFETY: a fresh shared anonymous mapping, zero-filled; AtomicU64 is valid for all-zero bytes.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: slot k lies inside the mapping, 64-byte aligned, and lives until the munmap below,
    // which happens after every process using it is killed and reaped.
    let slot = |k: usize| unsafe { &*(p.cast::<u8>().add(k * 64) as *const AtomicU64) };
    let total = || (0..n as usize).map(|k| slot(k).load(Ordering::Relaxed)).sum::<u64>();
    let mut pids = Vec::new();
    let mut err = None;
    for k in 0..n as usize {
        // SAFETY: the child only runs `busy`, which computes and touches an atomic: no locks,
        // no allocation, so forking a multi-threaded process is fine.
        match unsafe { libc::fork() } {
            0 => {
                // SAFETY: prctl has no memory-safety preconditions.
                unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
                busy(slot(k))
            }
            -1 => {
                err = Some(io::Error::last_os_error());
                break;
            }
            pid => pids.push(pid),
        }
    }
    if err.is_none() {
        counters.ready();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(50));
            counters.set("cpu_loops", total());
        }
    }
    for &pid in &pids {
        // SAFETY: our own children, not yet reaped.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
    counters.set("cpu_loops", total());
    // SAFETY: every user of the mapping is gone.
    unsafe { libc::munmap(p, len) };
    err.map_or(Ok(()), Err)
}

/// A busy loop counting its rounds into `slot`; never returns (killed by the parent).
fn busy(slot: &AtomicU64) -> ! {
    let mut x = 1.0f64;
    loop {
        for i in 0..1_000_000 {
            x = (x * 1.000_001 + f64::from(i)).sqrt();
        }
        std::hint::black_box(x);
        slot.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::testutil::{run_for, TempDir};

    #[test]
    fn generated_tree_compiles_cleanly() {
        if !(on_path("cc") && on_path("make")) {
            return;
        }
        let tmp = TempDir::new("make-gen");
        let src = tmp.work().join("src");
        generate(&src, Tree { files: 2, funcs: 3 }).unwrap();
        let out = Command::new("make")
            .arg("-s")
            .arg("CFLAGS=-O0 -Wall -Werror")
            .current_dir(&src)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(Command::new(src.join("prog")).output().unwrap().status.success());
        let lines = std::fs::read_to_string(src.join("m000.c")).unwrap().lines().count();
        assert!(lines > 90, "{lines}");
        clean(&src).unwrap();
        assert!(!src.join("prog").exists() && !src.join("m000.o").exists());
    }

    #[test]
    fn builds_a_small_tree_repeatedly() {
        if !(on_path("cc") && on_path("make")) {
            return;
        }
        let small = Tree { files: 3, funcs: 2 };
        let tmp = TempDir::new("make");
        let c = Counters::new(None);
        let stop = AtomicBool::new(false);
        // Stopped once a build is done (however long a busy machine takes: no time limit
        // short of a hang's), so the loop is seen to finish one and to clean up after.
        std::thread::scope(|s| {
            s.spawn(|| {
                let t0 = std::time::Instant::now();
                while c.get("builds") < 1 && t0.elapsed() < Duration::from_secs(300) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                stop.store(true, Ordering::SeqCst);
            });
            build_loop(&tmp.work(), &stop, &c, 2, small).unwrap();
        });
        assert!(c.get("builds") >= 1, "{}", c.get("builds"));
        assert!(!tmp.work().join("src").exists());
    }

    #[test]
    fn full_tree_is_a_few_hundred_lines_per_file() {
        let tmp = TempDir::new("make-full");
        generate(&tmp.work(), FULL).unwrap();
        let n = std::fs::read_dir(tmp.work()).unwrap().count();
        assert_eq!(n, FULL.files + 3);
        let lines = std::fs::read_to_string(tmp.work().join("m059.c"))
            .unwrap()
            .lines()
            .count();
        assert!((300..600).contains(&lines), "{lines}");
    }

    #[test]
    fn cpu_loops_fallback_counts_and_reaps() {
        let (_tmp, c, _) = run_for("cpuloops", Duration::from_millis(400), |_, s, c| cpu_loops(s, c, 2));
        assert!(c.get("cpu_loops") >= 1, "{}", c.get("cpu_loops"));
    }

    #[test]
    fn finds_programs_on_path() {
        assert!(on_path("sh"));
        assert!(!on_path("latlab-no-such-program"));
    }
}
