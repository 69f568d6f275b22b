//! A window of the outbox: the documents read from a target's queue, the events they hold
//! (as one document per event, the shape the dispatcher and the dead letters use), and what
//! to remove once some of those events are gone (delivered or buried).
//!
//! The queue holds two shapes of document:
//! - a group `{_id, t, seq, at, ev: [{i, s, k, b, bk, at, body}]}`, which the outbox writes
//!   (the events of one target queued together by concurrent requests; `bk` is the event's
//!   key as the dispatcher holds keys back, see `outbox::key_of`, so that the queue can be
//!   read past events of held keys);
//! - a single event `{_id, t, seq, k, b, at, body}`, which earlier versions wrote and
//!   listen records still are; its `_id` is the event's id.
//!
//! A group only ever loses events (they are `$pull`ed as they go), so removing a group all
//! of whose events read here are gone removes nothing that was not read.

use std::collections::HashSet;

use mongodb::bson::{doc, oid::ObjectId, Bson, Document};

/// Events read from a queue, and the documents they came in.
#[derive(Default)]
pub struct Window {
    /// The events to act on, in queue order (a group's in sequencer order).
    pub events: Vec<Document>,
    /// Events that cannot be sent (no id or no body: a damaged document).
    pub damaged: Vec<Document>,
    sources: Vec<Source>,
    /// Whether the last read of the queue filled its limit (more may be waiting).
    pub full: bool,
}

/// A document read: its id, whether it is a group, and every event it held.
struct Source {
    id: Bson,
    group: bool,
    events: Vec<ObjectId>,
}

/// What removing some events of a window takes: documents to delete whole, and groups to
/// `$pull` the events from.
#[derive(Debug, Default, PartialEq)]
pub struct Removal {
    /// Documents all of whose events are gone.
    pub whole: Vec<Bson>,
    /// Groups some of whose events are gone.
    pub partial: Vec<Bson>,
    /// The gone events of those groups.
    pub pulled: Vec<Bson>,
}

impl Window {
    /// Adds a document read from the queue; of its events, those `keep` accepts are acted on
    /// (the others stay queued).
    pub fn add(&mut self, doc: Document, mut keep: impl FnMut(&Document) -> bool) {
        let id = doc.get("_id").cloned().unwrap_or(Bson::Null);
        let (group, events) = expand(doc);
        let mut ids = Vec::with_capacity(events.len());
        for e in events {
            let Ok(eid) = e.get_object_id("_id") else {
                continue;
            };
            ids.push(eid);
            if !keep(&e) {
                continue;
            }
            if e.get_str("body").is_err() {
                self.damaged.push(e);
            } else {
                self.events.push(e);
            }
        }
        self.sources.push(Source {
            id,
            group,
            events: ids,
        });
    }

    /// What to remove once the events `gone` left the queue.
    pub fn removal(&self, gone: &[Bson]) -> Removal {
        let gone: HashSet<ObjectId> = gone.iter().filter_map(Bson::as_object_id).collect();
        let mut r = Removal::default();
        for s in &self.sources {
            let n = s.events.iter().filter(|e| gone.contains(e)).count();
            if n == s.events.len() && (n > 0 || s.group) {
                // Every event it held is gone (or an emptied group, left by a removal
                // that raced another).
                r.whole.push(s.id.clone());
            } else if n > 0 {
                r.partial.push(s.id.clone());
                r.pulled.extend(
                    s.events
                        .iter()
                        .filter(|e| gone.contains(e))
                        .map(|e| Bson::ObjectId(*e)),
                );
            }
        }
        r
    }
}

/// A document's events, each as a document of its own: `(whether it is a group, events)`.
fn expand(doc: Document) -> (bool, Vec<Document>) {
    let Ok(ev) = doc.get_array("ev") else {
        return (false, vec![doc]);
    };
    let t = doc.get("t").cloned().unwrap_or(Bson::Null);
    let at = doc.get("at").cloned().unwrap_or(Bson::Null);
    let mut out = Vec::with_capacity(ev.len());
    for e in ev {
        let Some(e) = e.as_document() else {
            continue;
        };
        let mut d = doc! {
            "_id": e.get("i").cloned().unwrap_or(Bson::Null),
            "t": t.clone(),
            "seq": e.get("s").cloned().unwrap_or(Bson::Null),
            "k": e.get("k").cloned().unwrap_or(Bson::Null),
            "b": e.get("b").cloned().unwrap_or(Bson::Null),
            "at": e.get("at").cloned().unwrap_or_else(|| at.clone()),
        };
        if let Some(body) = e.get("body") {
            d.insert("body", body.clone());
        }
        out.push(d);
    }
    (true, out)
}

/// The element of a group that holds `event` (a document of the shape [`expand`] makes).
pub fn element(event: &Document) -> Document {
    let mut e = Document::new();
    for (from, to) in [
        ("_id", "i"),
        ("seq", "s"),
        ("k", "k"),
        ("b", "b"),
        ("at", "at"),
        ("body", "body"),
    ] {
        if let Some(v) = event.get(from) {
            e.insert(to, v.clone());
        }
    }
    e.insert("bk", super::key_of(event));
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: i64, key: &str) -> Document {
        doc! {"_id": ObjectId::new(), "t": "a:webhook", "seq": seq, "k": key, "b": "b", "at": mongodb::bson::DateTime::from_millis(1), "body": format!("{seq}")}
    }

    fn group(events: &[&Document]) -> Document {
        doc! {
            "_id": ObjectId::new(),
            "t": "a:webhook",
            "seq": 100,
            "at": mongodb::bson::DateTime::from_millis(2),
            "ev": events.iter().map(|e| Bson::Document(element(e))).collect::<Vec<_>>(),
        }
    }

    #[test]
    fn a_group_expands_into_the_events_it_was_made_of() {
        let (a, b) = (event(1, "x"), event(2, "y"));
        let mut w = Window::default();
        w.add(group(&[&a, &b]), |_| true);
        assert_eq!(w.events, vec![a, b]);
        assert!(w.damaged.is_empty());
    }

    #[test]
    fn only_a_group_whose_every_event_is_gone_is_removed_whole() {
        let (a, b, c) = (event(1, "x"), event(2, "y"), event(3, "z"));
        let (g1, g2) = (group(&[&a, &b]), group(&[&c]));
        let (id1, id2) = (
            g1.get("_id").cloned().unwrap(),
            g2.get("_id").cloned().unwrap(),
        );
        let single = event(4, "w");
        let sid = single.get("_id").cloned().unwrap();
        let mut w = Window::default();
        // `b` is held: not acted on, but still the group's.
        w.add(g1, |e| e.get_str("k") != Ok("y"));
        w.add(g2, |_| true);
        w.add(single, |_| true);
        assert_eq!(w.events.len(), 3);
        let ids = |d: &[&Document]| {
            d.iter()
                .map(|e| e.get("_id").cloned().unwrap())
                .collect::<Vec<_>>()
        };
        let r = w.removal(&ids(&[&a, &c]));
        assert_eq!(
            r,
            Removal {
                whole: vec![id2.clone()],
                partial: vec![id1.clone()],
                pulled: ids(&[&a]),
            }
        );
        let r = w.removal(&ids(&[&a, &b, &c, &w.events[2].clone()]));
        assert_eq!(r.whole, vec![id1, id2, sid]);
        assert!(r.partial.is_empty());
        assert!(w.removal(&[]).whole.is_empty());
    }

    #[test]
    fn an_event_without_a_body_is_damaged_and_an_emptied_group_goes() {
        let mut a = event(1, "x");
        a.remove("body");
        let g = group(&[&a]);
        let empty = doc! {"_id": 7, "t": "a:webhook", "seq": 1, "ev": []};
        let mut w = Window::default();
        w.add(g, |_| true);
        w.add(empty, |_| true);
        assert!(w.events.is_empty());
        assert_eq!(w.damaged.len(), 1);
        assert_eq!(w.removal(&[]).whole, vec![Bson::Int32(7)]);
    }
}
