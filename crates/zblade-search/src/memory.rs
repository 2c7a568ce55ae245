//! How this process's memory is set up and handed back: glibc's allocator tuned for a process
//! that answers once (a cold `zblade context`), which then ends without tearing anything down,
//! and, for a long-running one (the tray, `zblade watch`) going idle, freed memory returned and
//! clean pages of mapped files taken out of its resident set.
//!
//! The allocator's functions need glibc, the page-out Linux; elsewhere each is a no-op.

/// Hands memory the process freed back to the system, after a long-running process let its
/// models go (`zblade_engine`'s idle release). glibc keeps freed memory in its arenas for reuse,
/// so dropping an ONNX Runtime session (tens of megabytes, allocated from several threads) lowers
/// the resident size only once the arenas are trimmed. Returns whether any memory was released;
/// a no-op (false) on other C libraries.
#[allow(unsafe_code)]
pub fn return_freed_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> std::ffi::c_int;
        }
        // SAFETY: malloc_trim takes no pointers and only walks glibc's own arenas under their
        // locks; any thread may call it at any time.
        unsafe { malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        false
    }
}

/// Sets glibc's allocator up for a process that loads a model, answers once and exits (a cold
/// `zblade context`): every thread allocates from one arena, and large blocks come from the
/// heap and stay there when freed instead of being mapped and unmapped. Loading a model
/// copies its 22 MB several times (the file, ONNX Runtime's parse, its packed weights); each
/// copy into fresh pages costs a page fault per 4 KB, and with these settings later copies
/// reuse the pages earlier ones freed (a cold context touched 25% fewer pages and ran ~6 ms
/// faster on two cores; docs/BENCHMARKS.md, "The lean install"). Not for long-running
/// processes, which should hand freed memory back ([`return_freed_memory`]). Call it before
/// the process starts threads. A no-op on other C libraries.
#[allow(unsafe_code)]
pub fn tune_allocator_for_one_answer() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // glibc's <malloc.h>.
        const M_TRIM_THRESHOLD: std::ffi::c_int = -1;
        const M_MMAP_THRESHOLD: std::ffi::c_int = -3;
        const M_ARENA_MAX: std::ffi::c_int = -8;
        unsafe extern "C" {
            fn mallopt(param: std::ffi::c_int, value: std::ffi::c_int) -> std::ffi::c_int;
        }
        // SAFETY: mallopt takes plain integers and changes only glibc's allocation policy,
        // under its own lock; blocks already allocated are unaffected.
        unsafe {
            mallopt(M_ARENA_MAX, 1);
            mallopt(M_MMAP_THRESHOLD, 64 << 20);
            mallopt(M_TRIM_THRESHOLD, 256 << 20);
        }
    }
}

/// Ends a process that has answered once (a cold `zblade context`), with status 0, once its
/// standard output and error are flushed, without running the C and C++ teardown that `exit`
/// runs: ONNX Runtime's static destructors free its kernel registry and thread pools one block
/// at a time, which took ~8 ms of a cold context's 170 on two cores (docs/BENCHMARKS.md, "The
/// lean install"), for memory the kernel takes back at once anyway. Only for a process with
/// nothing left to write: open files are closed by the kernel, but nothing buffered outside
/// Rust's standard streams is flushed (SQLite writes through, and the caller wrote nothing).
/// A flush that fails is returned, so the caller can report it.
#[allow(unsafe_code)]
pub fn exit_after_one_answer() -> std::io::Result<std::convert::Infallible> {
    use std::io::Write;
    std::io::stdout().flush()?;
    std::io::stderr().flush()?;
    #[cfg(unix)]
    {
        unsafe extern "C" {
            fn _exit(status: std::ffi::c_int) -> !;
        }
        // SAFETY: _exit takes an integer and never returns; it ends every thread of the process
        // at once, so no thread runs on with state another was tearing down.
        unsafe { _exit(0) }
    }
    #[cfg(not(unix))]
    {
        std::process::exit(0)
    }
}

/// Asks the kernel to take this process's clean pages of mapped files out of its resident set:
/// the code and read-only data of the libraries it ran (the engine library, ONNX Runtime,
/// WebKitGTK), which an idle process does not run. A long-running process calls it as it
/// idles, after [`return_freed_memory`]. Nothing is lost: the pages stay in the kernel's page
/// cache (which it may drop under pressure) and fault back in, without reading the disk while
/// they are cached, when next used. Pages other processes map too are left where they are (the
/// kernel skips them). Only mappings that cannot be written are advised, so no private copy
/// of a page is ever pushed to swap. Returns the bytes of the mappings advised (0 on kernels
/// before Linux 5.4, which lack `MADV_PAGEOUT`, and on other systems).
#[allow(unsafe_code)]
pub fn page_out_mapped_files() -> usize {
    #[cfg(target_os = "linux")]
    {
        // <sys/mman.h>, Linux 5.4.
        const MADV_PAGEOUT: std::ffi::c_int = 21;
        unsafe extern "C" {
            fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: std::ffi::c_int) -> std::ffi::c_int;
        }
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
            return 0;
        };
        let mut advised = 0;
        for (start, end) in maps.lines().filter_map(read_only_file_mapping) {
            // SAFETY: MADV_PAGEOUT changes only which pages are resident, never their contents:
            // a clean file page is read back from the page cache or the file on its next access.
            // A range unmapped by another thread since the maps were read fails with ENOMEM; one
            // mapped anew in between (anonymous memory, say) is at worst swapped out, its
            // contents kept. No pointer is dereferenced here.
            if unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_PAGEOUT) } == 0 {
                advised += end - start;
            }
        }
        advised
    }
    #[cfg(not(target_os = "linux"))]
    {
        0
    }
}

/// The address range of one line of `/proc/self/maps` when it maps a file read-only
/// (`start-end perms offset dev inode path`, perms without `w`, a path that is a file, not
/// `[heap]` or an anonymous mapping).
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn read_only_file_mapping(line: &str) -> Option<(usize, usize)> {
    let mut fields = line.split_ascii_whitespace();
    let range = fields.next()?;
    let perms = fields.next()?;
    let path = fields.nth(3)?;
    if perms.contains('w') || !path.starts_with('/') {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let (start, end) = (
        usize::from_str_radix(start, 16).ok()?,
        usize::from_str_radix(end, 16).ok()?,
    );
    (end > start).then_some((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_read_only_mappings_of_files_are_paged_out() {
        let line = |l: &str| read_only_file_mapping(l);
        assert_eq!(
            line("7f12a0000000-7f12a0400000 r-xp 00001000 fe:01 1234  /usr/lib/libzblade_engine.so"),
            Some((0x7f12a0000000, 0x7f12a0400000))
        );
        assert_eq!(
            line("7f1200000000-7f1200001000 r--s 00000000 fe:01 99 /usr/share/fonts/a.ttf"),
            Some((0x7f1200000000, 0x7f1200001000))
        );
        // Written pages (a library's data, the heap, anonymous memory) stay.
        assert_eq!(
            line("7f12a0400000-7f12a0401000 rw-p 00401000 fe:01 1234 /usr/lib/libzblade_engine.so"),
            None
        );
        assert_eq!(line("55d0c0000000-55d0c0100000 rw-p 00000000 00:00 0 [heap]"), None);
        assert_eq!(line("7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0 [vdso]"), None);
        assert_eq!(line("7f1300000000-7f1300100000 r--p 00000000 00:00 0"), None);
        assert_eq!(line("not a mapping"), None);
    }

    /// The kernel's count of this process's resident pages of mapped files, in kB.
    fn resident_file_kb() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("RssFile:")).unwrap();
        line.split_ascii_whitespace().nth(1).unwrap().parse().unwrap()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn paging_out_lowers_the_resident_file_pages_and_the_code_still_runs() {
        // Touch this binary's own pages, then page them out: the resident count falls.
        let before = resident_file_kb();
        let advised = page_out_mapped_files();
        let after = resident_file_kb();
        if advised == 0 {
            // A kernel before 5.4 refuses MADV_PAGEOUT; nothing else to check.
            return;
        }
        assert!(
            after < before,
            "resident file pages {before} kB before, {after} kB after"
        );
        // The pages come back when used: the code runs and its read-only data reads the same.
        let text: &'static str = "a string in the binary's read-only data";
        assert_eq!(text.split(' ').count(), 7);
        assert!(resident_file_kb() > 0);
    }
}
