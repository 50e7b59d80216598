//! Seed 004's "YouTube video": a browser plugin (Flash, 2010) decoding frames at the video's
//! rate and handing each to the X server, which draws it. Two SCHED_OTHER tasks that wake
//! every frame: the plugin sleeps until the next frame is due (`nanosleep`, so an hrtimer on
//! a 2.6 kernel), decodes for `decode_us` in user space and sends the frame over the X
//! socket; the X server, asleep in `select()` on that socket, wakes and spends `x_us`
//! putting the image on screen. The seed gives none of these sizes: the estimates and their
//! reasoning are in the built-in workload file (`workloads/video-make-j10.toml`), and each is a `CommandSpec::Video`
//! field an experiment can change.

use super::ops::Ops;
use super::{Action, ProgCx, Program, TaskSpec};
use crate::kernel::path::Chan;
use crate::workload::syscall::Syscall;
use latlab_core::Nanos;
use std::cell::Cell;
use std::rc::Rc;

/// Frame size the plugin sends over the X socket: a 480x360 frame in 32-bit pixels, put
/// with MIT-SHM, so only the request (about 64 bytes) crosses the socket; the image is
/// copied by X from shared memory as part of its `x_us`.
const X_REQUEST_BYTES: u64 = 64;

/// Start the plugin and the X server (they run until the run ends).
pub(crate) fn spawn(o: &mut Ops, fps: u32, decode_ns: Nanos, x_ns: Nanos, start: Nanos) {
    let pending = Rc::new(Cell::new(0u32));
    let token = Rc::new(Cell::new(None));
    let frame_ns = 1_000_000_000 / Nanos::from(fps.max(1));
    let (p2, t2) = (pending.clone(), token.clone());
    o.spawn(move |_| {
        TaskSpec::user(
            "Xorg",
            Box::new(XServer {
                pending: p2,
                token: t2,
                work_ns: x_ns,
                busy: false,
            }),
        )
    });
    o.spawn(move |_| {
        TaskSpec::user(
            "plugin-containe",
            Box::new(Plugin {
                pending,
                token,
                frame_ns,
                decode_ns,
                next_frame: start + frame_ns,
                step: 0,
            }),
        )
    });
}

/// The plugin: sleep to the frame's time, decode, send.
struct Plugin {
    pending: Rc<Cell<u32>>,
    token: Rc<Cell<Option<u64>>>,
    frame_ns: Nanos,
    decode_ns: Nanos,
    next_frame: Nanos,
    step: u8,
}

impl Program for Plugin {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        self.step = (self.step + 1) % 3;
        match self.step {
            1 => {
                // A late frame is decoded at once (the player drops none here).
                let wait = self.next_frame.saturating_sub(cx.now);
                self.next_frame += self.frame_ns;
                if wait > 0 {
                    return Action::Sleep(wait);
                }
                Action::Compute(cx.m.syscall_ns)
            }
            2 => Action::Compute(self.decode_ns),
            _ => {
                self.pending.set(self.pending.get() + 1);
                Action::Call(Syscall::SendMsg {
                    wake: self.token.get().map(Chan::Net),
                    bytes: X_REQUEST_BYTES,
                })
            }
        }
    }
}

/// The X server: `select()` on its clients' sockets, then one request per frame.
struct XServer {
    pending: Rc<Cell<u32>>,
    token: Rc<Cell<Option<u64>>>,
    work_ns: Nanos,
    busy: bool,
}

impl Program for XServer {
    fn next(&mut self, cx: &mut ProgCx) -> Action {
        if self.token.get().is_none() {
            self.token.set(Some(cx.socket()));
        }
        if std::mem::take(&mut self.busy) || self.pending.get() == 0 {
            return Action::Call(Syscall::Select {
                queued: self.pending.clone(),
                chan: Chan::Net(self.token.get().expect("set above")),
            });
        }
        self.pending.set(self.pending.get() - 1);
        self.busy = true;
        Action::Compute(self.work_ns)
    }
}
