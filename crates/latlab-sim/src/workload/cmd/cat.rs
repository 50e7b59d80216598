//! `cat` of old files already on disk (the box's history before a run, `Preload`): each
//! looked up once, read whole through the page cache and closed, its inode then unused and
//! its pages cached.

use crate::workload::ops::Ops;
use crate::workload::ProgCx;

/// One file a stage; false when `mb` are read.
pub(crate) fn refill(o: &mut Ops, stage: u32, cx: &mut ProgCx, mb: u64, file_kb: u64) -> bool {
    let file_kb = file_kb.max(4);
    if u64::from(stage) >= mb * 1024 / file_kb {
        return false;
    }
    let pages = file_kb / 4;
    let f = cx.file_on_disk(pages);
    cx.st.dcache.looked_up_once();
    o.read(f, pages * 4096);
    o.push(move |cx| {
        if let Some(r) = cx.st.mm.files.get_mut(&f) {
            r.in_use = false;
        }
        None
    });
    true
}
