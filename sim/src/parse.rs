//! Parsing and validating scenario files: from `&str` and a display name to a runnable
//! [`Script`], or a [`ParseError`] naming file, line, column and field.
//!
//! Two passes over the text: `toml` deserializes into [`Scenario`] (unknown keys, wrong types
//! and missing fields come back with a byte span), then the values are checked against each
//! other (unknown op, worker, group, variant, policy, fault; a lease used before it is bound;
//! time going backwards; impossible config; a field the op does not take; a malformed
//! `expect`), each error located with `toml_edit`'s spans of the offending value. No I/O, and
//! never a panic: every input maps to a `Script` or a `ParseError`.

use crate::engine::{Expiry, HandlerRun, Setup};
use crate::scenario::{Expect, Scenario, Step};
pub use crate::script::{bind_names, LOOP_PASSES_DEFAULT, LOOP_PASSES_MAX, LOOP_PASSES_MIN};
use crate::script::{Expectations, Op, Script, ScriptStep};
use crate::trace::Fault;
use leasehold_model::{AckPolicy, HandleCall, Invariant, Ms, Outcome, Reason, SettleOp, Variant};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;
use toml_edit::{ImDocument, InlineTable, Item, Table, Value};

/// A scenario file that cannot be run, located in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The file's display name.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (in characters).
    pub column: usize,
    /// The field at fault, as a path (`step[3].op`), when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: ", self.file, self.line, self.column)?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

/// The ops a step may name.
pub const OPS: [&str; 13] = [
    "fetch",
    "ack",
    "nack",
    "renew",
    "reject",
    "handle",
    "crash",
    "restart",
    "pause",
    "publish",
    "broker_restart",
    "wait",
    "drain",
];

/// The fields each op takes; `*` marks a required one.
fn fields_of(op: &str) -> &'static [&'static str] {
    match op {
        "fetch" => &[
            "worker*", "bind", "group", "limit", "lease_ms", "fault", "expect",
        ],
        "ack" => &[
            "worker*",
            "lease*",
            "fault",
            "receipt",
            "before_timer",
            "expect",
        ],
        "nack" => &[
            "worker*",
            "lease*",
            "delay_ms",
            "reason",
            "fault",
            "receipt",
            "before_timer",
            "expect",
        ],
        "renew" => &[
            "worker*",
            "lease*",
            "extend_ms",
            "fault",
            "receipt",
            "before_timer",
            "expect",
        ],
        "reject" => &[
            "worker*",
            "lease*",
            "reason",
            "fault",
            "receipt",
            "before_timer",
            "expect",
        ],
        "handle" => &[
            "worker*",
            "lease*",
            "outcome",
            "reason",
            "error_kind",
            "calls",
            "fault",
            "expect",
        ],
        "crash" | "restart" => &["worker*", "expect"],
        "pause" => &["worker*", "for_ms*", "expect"],
        "publish" | "broker_restart" | "wait" => &["expect"],
        "drain" => &[
            "outcome",
            "outcomes",
            "reason",
            "error_kind",
            "liveness_ms_max",
            "expect",
        ],
        _ => &[],
    }
}

/// The `expect` values a step of `op` may name.
fn expect_values(op: &str) -> &'static [&'static str] {
    const SETTLE: &[&str] = &[
        "ok",
        "stale_lease",
        "receipt_mismatch",
        "backend_unavailable",
        "ambiguous",
        "failed",
        "invalid",
    ];
    match op {
        "fetch" => &[
            "ok",
            "empty",
            "backend_unavailable",
            "ambiguous",
            "failed",
            "invalid",
        ],
        "ack" | "nack" | "renew" | "reject" | "handle" => SETTLE,
        "drain" => &["ok", "unsettled"],
        _ => &["ok"],
    }
}

/// The most events a scripted scenario may publish (a bound, so that a typo cannot make a
/// replay run out of memory).
pub const EVENTS_MAX: u32 = 100_000;
/// The largest `max_attempts` of a scripted scenario, as of a seeded run
/// ([`crate::seeded::setup::ATTEMPTS_MAX`]): a drain redelivers a failing event that many
/// times, so a typo cannot make a replay run for hours.
pub const ATTEMPTS_MAX: u32 = crate::seeded::setup::ATTEMPTS_MAX;
/// The most leases one fetch step may ask for.
pub const LIMIT_MAX: u32 = 10_000;

const OUTCOMES: [&str; 5] = ["ok", "error", "ack", "nack", "reject"];
const CALLS: [&str; 3] = ["ack", "nack", "reject"];

/// An error at byte `offset` of `src`.
fn located(
    src: &str,
    file: &str,
    offset: usize,
    field: Option<String>,
    message: String,
) -> ParseError {
    let (line, column) = position(src, offset);
    ParseError {
        file: file.to_string(),
        line,
        column,
        field,
        message,
    }
}

/// Parses and validates a scenario. `file` is the name errors show.
pub fn parse(src: &str, file: &str) -> Result<Script, ParseError> {
    let doc = match ImDocument::parse(src) {
        Ok(doc) => doc,
        Err(error) => return Err(syntax_error(src, file, &error)),
    };
    let at = Locator { src, file, doc };
    let scenario = scenario_of_toml(src, file)?;
    Validator::new(&at, scenario).run()
}

/// The scenario TOML text `src` holds, not yet validated: a TOML syntax error or a field of
/// the wrong shape is one line with `file`, the line, the column and the field when known.
pub fn scenario_of_toml(src: &str, file: &str) -> Result<Scenario, ParseError> {
    toml::from_str(src).map_err(|error: toml::de::Error| {
        if let Err(syntax) = ImDocument::parse(src) {
            return syntax_error(src, file, &syntax);
        }
        let offset = error.span().map_or(0, |span| span.start);
        let message = one_line(error.message());
        let field = named_field(src, offset, &message).or_else(|| field_at(src, offset));
        let message = match message.as_str() {
            "duplicate field `lease_ms`" if src.contains("claim_idle_ms") => {
                format!("{message} (`claim_idle_ms` is another name for it: give one of them)")
            }
            _ => message,
        };
        located(src, file, offset, field, message)
    })
}

/// The field a "missing field `x`" or "duplicate field `x`" error names, within the table
/// the error points at (its header's line, or the top level).
fn named_field(src: &str, offset: usize, message: &str) -> Option<String> {
    let name = ["missing field `", "duplicate field `"]
        .iter()
        .find_map(|prefix| message.strip_prefix(prefix))?
        .split('`')
        .next()?;
    let at_header = src[line_start(src, offset)..].trim_start().starts_with('[');
    match field_at(src, offset) {
        Some(table) if at_header => Some(format!("{table}.{name}")),
        _ if offset == 0 => Some(name.to_string()),
        _ => None,
    }
}

/// A TOML syntax error, located; it names the key of its line when it is in a value (a
/// number too large, a string left open).
fn syntax_error(src: &str, file: &str, error: &toml_edit::TomlError) -> ParseError {
    let offset = char_boundary(src, error.span().map_or(0, |span| span.start));
    let message = format!("invalid TOML: {}", one_line(error.message()));
    let in_value = src[line_start(src, offset)..offset].contains('=');
    let field = field_at(src, offset).filter(|_| in_value);
    located(src, file, offset, field, message)
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A [`ParseError`] located at the key `path` (`["config", "lease_ms"]`) of the scenario text
/// `src` — at the deepest part of the path the file has, or its first line.
pub fn error_at_key(src: &str, file: &str, path: &[&str], message: String) -> ParseError {
    let segments: Vec<Seg<'_>> = path.iter().map(|key| Seg::Key(key)).collect();
    match ImDocument::parse(src) {
        Ok(doc) => Locator { src, file, doc }.error(&segments, message),
        Err(_) => located(src, file, 0, Some(path.join(".")), message),
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn position(src: &str, offset: usize) -> (usize, usize) {
    let offset = char_boundary(src, offset);
    let line = src[..offset].matches('\n').count() + 1;
    let column = src[line_start(src, offset)..offset].chars().count() + 1;
    (line, column)
}

/// The 1-based line of byte offsets asked in increasing order, each counted on from the one
/// before (an offset before the last one asked is counted from the start).
#[derive(Default)]
struct LineCursor {
    /// The last offset asked (on a character boundary).
    at: usize,
    /// The newlines before it: its line, less one.
    newlines: usize,
}

impl LineCursor {
    fn line(&mut self, src: &str, offset: usize) -> usize {
        let offset = char_boundary(src, offset);
        if offset < self.at {
            *self = LineCursor::default();
        }
        self.newlines += src[self.at..offset].matches('\n').count();
        self.at = offset;
        self.newlines + 1
    }
}

/// `offset`, moved back to the nearest character boundary within `src`.
fn char_boundary(src: &str, offset: usize) -> usize {
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Where the line holding byte `offset` of `src` starts.
fn line_start(src: &str, offset: usize) -> usize {
    let offset = char_boundary(src, offset);
    src[..offset].rfind('\n').map_or(0, |i| i + 1)
}

/// The field path at a byte offset, from the table headers above it and the key on its line.
fn field_at(src: &str, offset: usize) -> Option<String> {
    let mut table = String::new();
    let mut steps = 0usize;
    let mut start = 0usize;
    for line in src.split_inclusive('\n') {
        let end = start + line.len();
        let trimmed = line.trim();
        if let Some(name) = trimmed
            .strip_prefix("[[")
            .and_then(|rest| rest.split("]]").next())
        {
            let name = name.trim();
            if name == "step" {
                table = format!("step[{steps}]");
                steps += 1;
            } else {
                table = name.to_string();
            }
        } else if let Some(name) = trimmed
            .strip_prefix('[')
            .and_then(|rest| rest.split(']').next())
        {
            table = name.trim().to_string();
        }
        if offset < end || end == src.len() {
            let is_header = trimmed.starts_with('[');
            let key = trimmed
                .split('=')
                .next()
                .map(str::trim)
                .filter(|key| !is_header && trimmed.contains('=') && !key.is_empty());
            return match (table.is_empty(), key) {
                (true, None) => None,
                (true, Some(key)) => Some(key.to_string()),
                (false, None) => Some(table),
                (false, Some(key)) => Some(format!("{table}.{key}")),
            };
        }
        start = end;
    }
    None
}

/// One segment of a path into the document.
#[derive(Clone, Copy, Debug)]
enum Seg<'p> {
    Key(&'p str),
    Index(usize),
}

enum Node<'d> {
    Table(&'d Table),
    Item(&'d Item),
    Value(&'d Value),
    Inline(&'d InlineTable),
}

impl<'d> Node<'d> {
    fn span(&self) -> Option<Range<usize>> {
        match self {
            Node::Table(table) => table.span(),
            Node::Item(item) => item.span(),
            Node::Value(value) => value.span(),
            Node::Inline(table) => table.span(),
        }
    }

    fn child(&self, seg: Seg<'_>) -> Option<Node<'d>> {
        match (self, seg) {
            (Node::Table(table), Seg::Key(key)) => {
                table.get_key_value(key).map(|(_, item)| Node::Item(item))
            }
            (Node::Inline(table), Seg::Key(key)) => {
                table.get_key_value(key).map(|(_, item)| Node::Item(item))
            }
            (Node::Item(Item::Table(table)), seg) => Node::Table(table).child(seg),
            (Node::Item(Item::ArrayOfTables(array)), Seg::Index(i)) => {
                array.get(i).map(Node::Table)
            }
            (Node::Item(Item::Value(value)), seg) => Node::Value(value).child(seg),
            (Node::Value(Value::InlineTable(table)), seg) => Node::Inline(table).child(seg),
            (Node::Value(Value::Array(array)), Seg::Index(i)) => array.get(i).map(Node::Value),
            _ => None,
        }
    }
}

struct Locator<'a> {
    src: &'a str,
    file: &'a str,
    doc: ImDocument<&'a str>,
}

impl Locator<'_> {
    /// The span of the deepest node of `path` that exists.
    fn span(&self, path: &[Seg<'_>]) -> Option<Range<usize>> {
        let mut node = Node::Table(self.doc.as_table());
        let mut best = None;
        for &seg in path {
            match node.child(seg) {
                Some(child) => {
                    best = child.span().or(best);
                    node = child;
                }
                None => break,
            }
        }
        best
    }

    fn error(&self, path: &[Seg<'_>], message: String) -> ParseError {
        let offset = self.span(path).map_or(0, |span| span.start);
        let (line, column) = position(self.src, offset);
        let field = path.iter().fold(String::new(), |mut text, seg| {
            match seg {
                Seg::Key(key) if text.is_empty() => text.push_str(key),
                Seg::Key(key) => {
                    text.push('.');
                    text.push_str(key);
                }
                Seg::Index(i) => text.push_str(&format!("[{i}]")),
            }
            text
        });
        ParseError {
            file: self.file.to_string(),
            line,
            column,
            field: (!field.is_empty()).then_some(field),
            message,
        }
    }
}

fn one_of(names: &[&str]) -> String {
    names
        .iter()
        .filter(|n| !n.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the checker knows of a worker while walking the steps.
#[derive(Clone, Copy, Default)]
struct WorkerState {
    crashed_at: Option<usize>,
    paused_until_ms: Ms,
    paused_at: usize,
}

struct Validator<'a> {
    at: &'a Locator<'a>,
    scenario: Scenario,
}

type Checked<T> = Result<T, ParseError>;

impl<'a> Validator<'a> {
    fn new(at: &'a Locator<'a>, scenario: Scenario) -> Validator<'a> {
        Validator { at, scenario }
    }

    fn fail<T>(&self, path: &[Seg<'_>], message: String) -> Checked<T> {
        Err(self.at.error(path, message))
    }

    fn run(self) -> Checked<Script> {
        let variant = self.variant()?;
        let setup = self.setup(variant)?;
        if self.scenario.steps.is_empty() && self.scenario.seed.is_none() {
            return self.fail(
                &[],
                "no steps: a scripted scenario needs at least one [[step]] (or a `seed`)"
                    .to_string(),
            );
        }
        if self.scenario.seed.is_none() {
            // A scripted scenario says what happens step by step: a seeded run's sections
            // would be silently unused.
            let sections = [
                ("[faults]", "faults", self.scenario.faults.is_some()),
                ("[workload]", "workload", self.scenario.workload.is_some()),
                ("`draws`", "draws", self.scenario.draws.is_some()),
            ];
            if let Some((shown, key, _)) = sections.iter().find(|(_, _, present)| *present) {
                return self.fail(
                    &[Seg::Key(key)],
                    format!(
                        "{shown} belongs to a seeded scenario (`seed = N`); a scripted one \
                         sets its faults on its steps"
                    ),
                );
            }
        }
        let steps = self.steps(&setup)?;
        let expect = self.expect(&setup)?;
        let uses_raw_ack = steps.iter().any(|s| {
            matches!(
                &s.op,
                Op::Settle {
                    op: SettleOp::Ack,
                    ..
                }
            )
        });
        let setup = Setup {
            check_at_least_once: setup.ack_policy.at_least_once() && !uses_raw_ack,
            ..setup
        };
        Ok(Script {
            file: self.at.file.to_string(),
            variant,
            events: self.scenario.config.events,
            setup,
            steps,
            expect,
            scenario: self.scenario,
        })
    }

    fn variant(&self) -> Checked<Variant> {
        let name = &self.scenario.variant;
        Variant::from_name(name).map_or_else(
            || {
                self.fail(
                    &[Seg::Key("variant")],
                    format!(
                        "unknown variant '{name}' (expected one of {})",
                        Variant::names()
                    ),
                )
            },
            Ok,
        )
    }

    fn setup(&self, variant: Variant) -> Checked<Setup> {
        let c = &self.scenario.config;
        let key = |k| [Seg::Key("config"), Seg::Key(k)];
        if c.groups.is_empty() {
            return self.fail(
                &key("groups"),
                "no groups: a scenario needs at least one consumer group".to_string(),
            );
        }
        if c.workers.is_empty() {
            return self.fail(
                &key("workers"),
                "no workers: a scenario needs at least one worker".to_string(),
            );
        }
        for (what, names) in [("groups", &c.groups), ("workers", &c.workers)] {
            let mut seen = BTreeSet::new();
            for (i, name) in names.iter().enumerate() {
                if name.is_empty() {
                    return self.fail(
                        &[Seg::Key("config"), Seg::Key(what), Seg::Index(i)],
                        format!("empty name in {what}"),
                    );
                }
                if !seen.insert(name) {
                    let singular = what.trim_end_matches('s');
                    return self.fail(
                        &[Seg::Key("config"), Seg::Key(what), Seg::Index(i)],
                        format!("duplicate {singular} name '{name}'"),
                    );
                }
            }
        }
        if c.events > EVENTS_MAX {
            return self.fail(
                &key("events"),
                format!("events = {} exceeds events_max = {EVENTS_MAX}", c.events),
            );
        }
        if c.lease_ms == 0 {
            return self.fail(
                &key("lease_ms"),
                "lease_ms = 0: every lease would expire as it is issued".to_string(),
            );
        }
        if c.max_attempts == 0 {
            return self.fail(
                &key("max_attempts"),
                "max_attempts = 0: an event could never be delivered (max_retries = r means max_attempts = r + 1)".to_string(),
            );
        }
        if c.max_attempts > ATTEMPTS_MAX {
            return self.fail(
                &key("max_attempts"),
                format!(
                    "max_attempts = {} exceeds attempts_max = {ATTEMPTS_MAX}",
                    c.max_attempts
                ),
            );
        }
        let Some(ack_policy) = AckPolicy::from_name(&c.ack_policy) else {
            let names: Vec<&str> = AckPolicy::ALL.iter().map(|p| p.name()).collect();
            return self.fail(
                &key("ack_policy"),
                format!(
                    "unknown ack_policy '{}' (expected one of {})",
                    c.ack_policy,
                    names.join(", ")
                ),
            );
        };
        let mut clock_offset_ms = vec![0; c.workers.len()];
        for (name, &offset) in &c.clock_offset_ms {
            let Some(worker) = c.workers.iter().position(|w| w == name) else {
                return self.fail(
                    &[
                        Seg::Key("config"),
                        Seg::Key("clock_offset_ms"),
                        Seg::Key(name),
                    ],
                    format!(
                        "unknown worker '{name}' (expected one of {})",
                        c.workers.join(", ")
                    ),
                );
            };
            clock_offset_ms[worker] = offset;
        }
        let expiry = match c.expiry.as_deref() {
            None => Expiry::AtDeadline,
            Some(name) => match Expiry::from_name(name) {
                Some(expiry) => expiry,
                None => {
                    return self.fail(
                        &key("expiry"),
                        format!("unknown expiry '{name}' (expected one of at_deadline, on_fetch)"),
                    )
                }
            },
        };
        Ok(Setup {
            variant,
            groups: c.groups.clone(),
            workers: c.workers.clone(),
            lease_ms: c.lease_ms,
            max_attempts: c.max_attempts,
            ack_policy,
            clock_offset_ms,
            check_at_least_once: ack_policy.at_least_once(),
            expiry,
            audit_every_step: false,
            // A script tells lapses at its `wait` steps.
            tell_lapses: false,
        })
    }

    fn steps(&self, setup: &Setup) -> Checked<Vec<ScriptStep>> {
        let mut steps = Vec::new();
        let mut bound: BTreeMap<String, usize> = BTreeMap::new();
        let mut workers = vec![WorkerState::default(); setup.workers.len()];
        let mut events = self.scenario.config.events;
        let mut last_ms = 0;
        // Each step's line, counted on from the previous step's (the steps come in the order
        // of the file): one pass over the text, however many steps.
        let mut lines = LineCursor::default();
        for (index, step) in self.scenario.steps.iter().enumerate() {
            let path = |field| [Seg::Key("step"), Seg::Index(index), Seg::Key(field)];
            if step.at_ms < last_ms {
                return self.fail(
                    &path("at_ms"),
                    format!(
                        "time goes backwards: at_ms = {} after step[{}] at {last_ms}",
                        step.at_ms,
                        index - 1
                    ),
                );
            }
            last_ms = step.at_ms;
            let op = step.op.as_str();
            if !OPS.contains(&op) {
                return self.fail(
                    &path("op"),
                    format!("unknown op '{op}' (expected one of {})", one_of(&OPS)),
                );
            }
            self.check_fields(index, step)?;
            let worker = match &step.worker {
                None => None,
                Some(name) => match setup.workers.iter().position(|w| w == name) {
                    Some(worker) => Some(worker),
                    None => {
                        return self.fail(
                            &path("worker"),
                            format!(
                                "unknown worker '{name}' (expected one of {})",
                                setup.workers.join(", ")
                            ),
                        )
                    }
                },
            };
            if let Some(worker) = worker {
                self.check_worker_state(index, step, &mut workers[worker])?;
            }
            if matches!(op, "fetch" | "handle" | "drain") && events == 0 {
                return self.fail(
                    &[Seg::Key("config"), Seg::Key("events")],
                    format!("events = 0, but step[{index}] ({op}) needs an event: set config.events or publish first"),
                );
            }
            if op == "publish" {
                events += 1;
                if events > EVENTS_MAX {
                    return self.fail(
                        &path("op"),
                        format!("this publish exceeds events_max = {EVENTS_MAX}"),
                    );
                }
            }
            if let Some(expect) = &step.expect {
                let allowed = expect_values(op);
                if !allowed.contains(&expect.as_str()) {
                    return self.fail(
                        &path("expect"),
                        format!(
                            "malformed expect '{expect}' for op '{op}' (expected one of {})",
                            one_of(allowed)
                        ),
                    );
                }
            }
            let fault = match &step.fault {
                None => Fault::None,
                Some(name) => match Fault::from_name(name) {
                    Some(fault) => fault,
                    None => {
                        let names: Vec<&str> = Fault::NAMED.iter().map(|f| f.name()).collect();
                        return self.fail(
                            &path("fault"),
                            format!(
                                "unknown fault '{name}' (expected one of {})",
                                names.join(", ")
                            ),
                        );
                    }
                },
            };
            let op = self.op(index, step, setup, &mut bound, events)?;
            steps.push(ScriptStep {
                index,
                at_ms: step.at_ms,
                worker,
                op,
                fault,
                expect: step.expect.clone(),
                repeat: step.repeat,
                before_timer: step.before_timer,
                line: lines.line(
                    self.at.src,
                    self.at
                        .span(&[Seg::Key("step"), Seg::Index(index)])
                        .map_or(0, |s| s.start),
                ),
            });
        }
        self.check_loop(&steps)?;
        Ok(steps)
    }

    /// The steps marked `repeat` (a lasso's loop) are the last ones, in one block, and do not
    /// include the liveness phase.
    fn check_loop(&self, steps: &[ScriptStep]) -> Checked<()> {
        let Some(first) = steps.iter().position(|s| s.repeat) else {
            return Ok(());
        };
        for step in &steps[first..] {
            let path = [Seg::Key("step"), Seg::Index(step.index), Seg::Key("repeat")];
            if !step.repeat {
                return self.fail(
                    &path,
                    format!(
                        "the steps marked `repeat` (a lasso's loop, from step[{first}]) must be the last ones, in one block"
                    ),
                );
            }
            if matches!(step.op, Op::Drain { .. }) {
                return self.fail(&path, "a lasso's loop cannot include `drain`".to_string());
            }
        }
        Ok(())
    }

    /// `[expect] loop_passes` needs a loop, and a sane count.
    fn check_loop_passes(&self, loop_passes: Option<u32>) -> Checked<()> {
        let key = [Seg::Key("expect"), Seg::Key("loop_passes")];
        let looped = self.scenario.steps.iter().any(|s| s.repeat);
        match loop_passes {
            Some(_) if !looped => self.fail(
                &key,
                "malformed expect: loop_passes, but no step is marked `repeat`".to_string(),
            ),
            Some(passes) if !(LOOP_PASSES_MIN..=LOOP_PASSES_MAX).contains(&passes) => self.fail(
                &key,
                format!(
                    "malformed expect: loop_passes = {passes} (expected {LOOP_PASSES_MIN} to {LOOP_PASSES_MAX})"
                ),
            ),
            _ => Ok(()),
        }
    }

    fn check_fields(&self, index: usize, step: &Step) -> Checked<()> {
        let present: [(&str, bool); 18] = [
            ("worker", step.worker.is_some()),
            ("bind", step.bind.is_some()),
            ("lease", step.lease.is_some()),
            ("group", step.group.is_some()),
            ("limit", step.limit.is_some()),
            ("lease_ms", step.lease_ms.is_some()),
            ("delay_ms", step.delay_ms.is_some()),
            ("extend_ms", step.extend_ms.is_some()),
            ("reason", step.reason.is_some()),
            ("outcome", step.outcome.is_some()),
            ("calls", !step.calls.is_empty()),
            ("for_ms", step.for_ms.is_some()),
            ("fault", step.fault.is_some()),
            ("receipt", step.receipt.is_some()),
            ("error_kind", step.error_kind.is_some()),
            ("outcomes", !step.outcomes.is_empty()),
            ("liveness_ms_max", step.liveness_ms_max.is_some()),
            ("before_timer", step.before_timer),
        ];
        let allowed = fields_of(&step.op);
        let takes: Vec<&str> = allowed.iter().map(|f| f.trim_end_matches('*')).collect();
        for (field, is_present) in present {
            if is_present && !takes.contains(&field) {
                return self.fail(
                    &[Seg::Key("step"), Seg::Index(index), Seg::Key(field)],
                    format!(
                        "op '{}' does not take `{field}` (it takes: {})",
                        step.op,
                        takes.join(", ")
                    ),
                );
            }
        }
        for required in allowed.iter().filter_map(|f| f.strip_suffix('*')) {
            let is_present = present
                .iter()
                .any(|&(field, there)| field == required && there);
            if !is_present {
                return self.fail(
                    &[Seg::Key("step"), Seg::Index(index), Seg::Key(required)],
                    format!("op '{}' needs `{required}`", step.op),
                );
            }
        }
        Ok(())
    }

    fn check_worker_state(
        &self,
        index: usize,
        step: &Step,
        state: &mut WorkerState,
    ) -> Checked<()> {
        let path = [Seg::Key("step"), Seg::Index(index), Seg::Key("op")];
        let name = step.worker.as_deref().unwrap_or_default();
        let settles = matches!(step.op.as_str(), "ack" | "nack" | "renew" | "reject");
        match (step.op.as_str(), state.crashed_at) {
            ("restart", None) => {
                return self.fail(&path, format!("worker '{name}' is not crashed"));
            }
            ("restart", Some(_)) => {
                state.crashed_at = None;
                return Ok(());
            }
            // A crashed worker's settle is a request it sent before crashing, still in flight.
            (_, Some(_)) if settles => return Ok(()),
            (op, Some(at)) => {
                return self.fail(
                    &path,
                    format!("worker '{name}' crashed at step[{at}] and has not restarted: it cannot {op}"),
                );
            }
            (_, None) => {}
        }
        if step.at_ms < state.paused_until_ms {
            return self.fail(
                &[Seg::Key("step"), Seg::Index(index), Seg::Key("at_ms")],
                format!(
                    "worker '{name}' is paused (step[{}]) until {} ms",
                    state.paused_at, state.paused_until_ms
                ),
            );
        }
        match step.op.as_str() {
            "crash" => {
                state.crashed_at = Some(index);
                state.paused_until_ms = 0;
            }
            "pause" => {
                state.paused_until_ms = step.at_ms.saturating_add(step.for_ms.unwrap_or(0));
                state.paused_at = index;
            }
            _ => {}
        }
        Ok(())
    }

    fn outcome(&self, index: usize, step: &Step, field: Seg<'_>, kind: &str) -> Checked<Outcome> {
        let text = Reason::new(step.reason.as_deref().unwrap_or_default());
        Ok(match kind {
            "ok" => Outcome::Ok,
            "ack" => Outcome::Ack,
            "nack" => Outcome::Nack(text),
            "reject" => Outcome::Reject(text),
            "error" => Outcome::Error {
                kind: Reason::new(step.error_kind.as_deref().unwrap_or("RuntimeError")),
                text,
            },
            other => {
                let mut path = vec![Seg::Key("step"), Seg::Index(index), Seg::Key("outcome")];
                if let Seg::Index(i) = field {
                    path = vec![
                        Seg::Key("step"),
                        Seg::Index(index),
                        Seg::Key("outcomes"),
                        Seg::Index(i),
                    ];
                }
                return self.fail(
                    &path,
                    format!(
                        "unknown outcome '{other}' (expected one of {})",
                        OUTCOMES.join(", ")
                    ),
                );
            }
        })
    }

    fn lease(&self, index: usize, step: &Step, bound: &BTreeMap<String, usize>) -> Checked<String> {
        let name = step.lease.clone().unwrap_or_default();
        if !bound.contains_key(&name) {
            let known: Vec<&str> = bound.keys().map(String::as_str).collect();
            let known = if known.is_empty() {
                "none yet".to_string()
            } else {
                known.join(", ")
            };
            return self.fail(
                &[Seg::Key("step"), Seg::Index(index), Seg::Key("lease")],
                format!("lease '{name}' is used before it is bound (bound so far: {known})"),
            );
        }
        Ok(name)
    }

    fn op(
        &self,
        index: usize,
        step: &Step,
        setup: &Setup,
        bound: &mut BTreeMap<String, usize>,
        events: u32,
    ) -> Checked<Op> {
        let path = |field| [Seg::Key("step"), Seg::Index(index), Seg::Key(field)];
        Ok(match step.op.as_str() {
            "fetch" => {
                let group = match &step.group {
                    None if setup.groups.len() == 1 => 0,
                    None => {
                        return self.fail(
                            &path("op"),
                            format!(
                                "fetch needs `group` when there are several ({})",
                                setup.groups.join(", ")
                            ),
                        )
                    }
                    Some(name) => match setup.groups.iter().position(|g| g == name) {
                        Some(group) => group,
                        None => {
                            return self.fail(
                                &path("group"),
                                format!(
                                    "unknown group '{name}' (expected one of {})",
                                    setup.groups.join(", ")
                                ),
                            )
                        }
                    },
                };
                let limit = step.limit.unwrap_or(1);
                if limit == 0 {
                    return self.fail(&path("limit"), "limit = 0 fetches nothing".to_string());
                }
                if limit > LIMIT_MAX {
                    return self.fail(
                        &path("limit"),
                        format!("limit = {limit} exceeds limit_max = {LIMIT_MAX}"),
                    );
                }
                if step.lease_ms == Some(0) {
                    return self.fail(&path("lease_ms"), "lease_ms = 0".to_string());
                }
                if let Some(name) = &step.bind {
                    if name.is_empty() {
                        return self.fail(&path("bind"), "empty lease name".to_string());
                    }
                    let names = bind_names(name, limit as usize);
                    for name in names {
                        if let Some(&at) = bound.get(&name) {
                            return self.fail(
                                &path("bind"),
                                format!("lease name '{name}' is already bound at step[{at}]"),
                            );
                        }
                        bound.insert(name, index);
                    }
                }
                Op::Fetch {
                    group,
                    limit: limit as usize,
                    lease_ms: step.lease_ms,
                    bind: step.bind.clone(),
                }
            }
            "ack" | "nack" | "renew" | "reject" => {
                let lease = self.lease(index, step, bound)?;
                let op = match step.op.as_str() {
                    "ack" => SettleOp::Ack,
                    "nack" => SettleOp::Nack {
                        delay_ms: step.delay_ms.unwrap_or(0),
                        reason: step.reason.as_deref().map(Reason::new),
                    },
                    "renew" => SettleOp::Renew {
                        extend_ms: step.extend_ms.unwrap_or(setup.lease_ms),
                    },
                    _ => SettleOp::Reject {
                        reason: step
                            .reason
                            .as_deref()
                            .filter(|r| !r.is_empty())
                            .map_or_else(|| Outcome::Reject(Reason::EMPTY).reason(), Reason::new),
                    },
                };
                Op::Settle {
                    lease,
                    op,
                    receipt: step.receipt,
                }
            }
            "handle" => {
                let lease = self.lease(index, step, bound)?;
                let kind = step.outcome.as_deref().unwrap_or("ok");
                let outcome = self.outcome(index, step, Seg::Key("outcome"), kind)?;
                let mut calls = Vec::new();
                for (i, call) in step.calls.iter().enumerate() {
                    calls.push(match call.as_str() {
                        "ack" => HandleCall::Ack,
                        "nack" => HandleCall::Nack,
                        "reject" => HandleCall::Reject(Reason::new(
                            step.reason.as_deref().unwrap_or_default(),
                        )),
                        other => {
                            return self.fail(
                                &[
                                    Seg::Key("step"),
                                    Seg::Index(index),
                                    Seg::Key("calls"),
                                    Seg::Index(i),
                                ],
                                format!(
                                    "unknown handle call '{other}' (expected one of {})",
                                    CALLS.join(", ")
                                ),
                            )
                        }
                    });
                }
                Op::Handle {
                    lease,
                    run: HandlerRun {
                        outcome,
                        calls,
                        handler_ms: 0,
                    },
                }
            }
            "crash" => Op::Crash,
            "restart" => Op::Restart,
            "pause" => Op::Pause {
                for_ms: step.for_ms.unwrap_or(0),
            },
            "publish" => Op::Publish,
            "broker_restart" => Op::BrokerRestart,
            "wait" => Op::Wait,
            _ => {
                let kind = step.outcome.as_deref().unwrap_or("ok");
                let default = self.outcome(index, step, Seg::Key("outcome"), kind)?;
                let mut per_event = Vec::new();
                for (i, kind) in step.outcomes.iter().enumerate() {
                    per_event.push(self.outcome(index, step, Seg::Index(i), kind)?);
                }
                let rounds = u64::from(events)
                    .saturating_mul(u64::from(setup.max_attempts))
                    .saturating_add(2);
                Op::Drain {
                    default,
                    per_event,
                    liveness_ms_max: step
                        .liveness_ms_max
                        .unwrap_or(rounds.saturating_mul(setup.lease_ms)),
                }
            }
        })
    }

    fn expect(&self, setup: &Setup) -> Checked<Expectations> {
        let Some(expect) = &self.scenario.expect else {
            return Ok(Expectations::default());
        };
        let Expect {
            invariants,
            violated,
            frontier,
            dead_letters,
            handler_calls,
            handler_runs,
            pending,
            dead_letter_reasons,
            loop_passes,
            trace_hash,
        } = expect.clone();
        let key = |k| [Seg::Key("expect"), Seg::Key(k)];
        if let Some(text) = &invariants {
            if text != "hold" {
                return self.fail(
                    &key("invariants"),
                    format!("malformed expect: invariants = '{text}' (expected \"hold\", or use violated = \"I1\")"),
                );
            }
            if violated.is_some() {
                return self.fail(
                    &key("violated"),
                    "malformed expect: both invariants = \"hold\" and violated".to_string(),
                );
            }
        }
        let violated = match &violated {
            None => None,
            Some(text) => match Invariant::parse(text) {
                Some(invariant) => Some(invariant),
                None => {
                    let ids: Vec<&str> = Invariant::ALL.iter().map(|i| i.id()).collect();
                    return self.fail(
                        &key("violated"),
                        format!(
                            "malformed expect: unknown invariant '{text}' (expected one of {})",
                            ids.join(", ")
                        ),
                    );
                }
            },
        };
        if frontier.is_some() && setup.groups.len() > 1 {
            return self.fail(
                &key("frontier"),
                "malformed expect: frontier needs a single group".to_string(),
            );
        }
        if let Some(runs) = &handler_runs {
            for (i, run) in runs.iter().enumerate() {
                if parse_run(run).is_none() {
                    return self.fail(
                        &[Seg::Key("expect"), Seg::Key("handler_runs"), Seg::Index(i)],
                        format!("malformed expect: handler run '{run}' (expected E<seq>#<delivery>, e.g. E3#2)"),
                    );
                }
            }
        }
        self.check_loop_passes(loop_passes)?;
        let trace_hash = match &trace_hash {
            None => None,
            Some(text) => match crate::scenario::parse_trace_hash(text) {
                Some(hash) => Some(hash),
                None => {
                    return self.fail(
                        &key("trace_hash"),
                        format!("malformed expect: trace_hash = '{text}' (expected 16 hex digits, as replay prints it)"),
                    )
                }
            },
        };
        Ok(Expectations {
            present: true,
            violated,
            frontier,
            dead_letters,
            handler_calls,
            handler_runs,
            pending,
            dead_letter_reasons,
            loop_passes,
            trace_hash,
        })
    }
}

/// `E3#2` → (3, 2).
fn parse_run(text: &str) -> Option<(u32, u32)> {
    let (seq, delivery) = text.strip_prefix('E')?.split_once('#')?;
    Some((seq.parse().ok()?, delivery.parse().ok()?))
}
