//! I6 when the graph has cycles (`--renews unbounded`): the explored graph, its strongly
//! connected components, fair cycles and lassos.
//!
//! 1. A breadth-first search builds the whole reachable graph (canonical states, workers not
//!    sorted: fairness is per worker): node ids in discovery order, the BFS tree (so the path
//!    to a node is a shortest one), every edge with its action and its **fairness group** — a
//!    worker (its fetch, handle and renew), a lease's expiry (per record), a request in flight
//!    (its delivery) — and, per node, the groups enabled there. Faults (crashes, drops,
//!    duplicates, lost replies, broker restarts) belong to no group: no fairness is assumed
//!    of them, and budgets make them impossible inside a cycle anyway. Safety violations and
//!    terminal states that are not settled are found on the way, first at the least depth.
//! 2. Restricted to the states that are neither settled nor violating, Tarjan's algorithm
//!    (iterative) gives the strongly connected components.
//! 3. A non-trivial component is a counterexample to I6 without fairness. Under weak
//!    fairness it is one iff every group enabled in *all* its states labels some edge inside
//!    it (Emerson–Lei): otherwise every cycle in it starves a group that is continuously
//!    enabled, and no fair behaviour stays in it. Testing maximal components is exact for
//!    weak fairness.
//! 4. The witness is a lasso: the BFS path to the component's earliest-discovered state, then
//!    a cycle from there that takes an edge of every group enabled throughout the component
//!    and visits a state where each other enabled group is disabled, and returns.

use crate::broker::Broker;
use crate::check::checked::CheckedBroker;
use crate::check::config::Fairness;
use crate::check::fingerprint::fingerprint;
use crate::check::model::SAFETY;
use crate::check::model::{Actions, LeaseModel};
use crate::check::search::{Counts, Exploration, Limits, Progress};
use crate::check::shortest::{path_to, Counterexample};
use crate::check::state::{Action, Msg, State};
use crate::check::table::FingerprintMap;
use crate::invariant::Invariant;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// A fairness group: the actions weak fairness treats as one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Group {
    /// Worker `i`'s own actions (fetch, handle, renew).
    Worker(u8),
    /// The expiry of the lease on (group, seq).
    Expiry(u8, u8),
    /// The delivery of a request in flight.
    Request(Msg),
    /// The timed model's clock.
    Time,
}

/// The fairness group of `action` in `state`, `None` for a fault.
pub fn group_of<B>(state: &State<B>, action: Action) -> Option<Group> {
    match action {
        Action::Fetch { worker, .. } | Action::Handle { worker, .. } | Action::Renew { worker } => {
            Some(Group::Worker(worker))
        }
        Action::Expire { group, seq } => Some(Group::Expiry(group, seq)),
        Action::Deliver { message, .. } => Some(Group::Request(state.in_flight[message as usize])),
        Action::Tick => Some(Group::Time),
        Action::Crash { .. }
        | Action::Drop { .. }
        | Action::Duplicate { .. }
        | Action::DuplicateDelivered { .. }
        | Action::BrokerRestart => None,
    }
}

const NO_GROUP: u32 = u32::MAX;
const SETTLED: u8 = 1;
const VIOLATING: u8 = 2;

#[derive(Clone, Copy, Debug)]
struct Edge {
    to: u32,
    group: u32,
    action: Action,
}

/// The explored graph.
struct Graph {
    tree: Vec<(u32, Option<Action>)>,
    flags: Vec<u8>,
    edge_start: Vec<u32>,
    edges: Vec<Edge>,
    enabled_start: Vec<u32>,
    enabled: Vec<u32>,
}

impl Graph {
    fn edges(&self, node: u32) -> &[Edge] {
        let node = node as usize;
        &self.edges[self.edge_start[node] as usize..self.edge_start[node + 1] as usize]
    }

    fn enabled(&self, node: u32) -> &[u32] {
        let node = node as usize;
        &self.enabled[self.enabled_start[node] as usize..self.enabled_start[node + 1] as usize]
    }

    fn live(&self, node: u32) -> bool {
        self.flags[node as usize] & (SETTLED | VIOLATING) == 0
    }
}

/// What the liveness search found.
#[derive(Clone, Debug)]
pub struct GraphSearch<B = Broker> {
    /// Counts and what was found, as the proof search reports them.
    pub exploration: Exploration<B>,
    /// A shortest counterexample per violated invariant (safety: the shallowest violating
    /// state; I6: a terminal unsettled state, else a lasso).
    pub found: Vec<Counterexample>,
    /// Non-trivial strongly connected components among unsettled states.
    pub cycles: u64,
    /// How many of them are fair (counterexamples under the fairness assumption).
    pub fair_cycles: u64,
    /// Edges stored.
    pub edges: u64,
}

/// Explores `model` as a graph and checks I6 on its cycles under `fairness` (see the module
/// documentation).
pub fn check<B: CheckedBroker>(
    model: &LeaseModel<B>,
    limits: &Limits,
    fairness: Fairness,
    progress: Option<Progress<'_>>,
) -> GraphSearch<B> {
    let model = model
        .clone()
        .with_symmetry(false)
        .with_partial_order(false)
        .with_late_duplicates(false);
    let (graph, mut out, first) = explore(&model, limits, progress);
    out.edges = graph.edges.len() as u64;
    for (invariant, node) in first {
        out.found.push(Counterexample {
            invariant,
            actions: path_to(&graph.tree, node),
            loop_start: None,
        });
    }
    if out.exploration.bounded.is_some() {
        return out;
    }
    // The fair component whose earliest state was discovered first (ids follow the
    // breadth-first order): its lasso has the shortest prefix.
    let mut earliest: Option<Vec<u32>> = None;
    strongly_connected(&graph, |component, graph| {
        out.cycles += 1;
        if fairness == Fairness::Weak && !fair(graph, component) {
            return;
        }
        out.fair_cycles += 1;
        let better = match &earliest {
            None => true,
            Some(e) => component[0] < e[0],
        };
        if better {
            earliest = Some(component.to_vec());
        }
    });
    if let Some(component) = earliest {
        if !out.found.iter().any(|c| c.invariant == Invariant::I6) {
            out.found.push(witness(&graph, &component, fairness));
        }
    }
    out.found
        .sort_by_key(|cx| Invariant::ALL.iter().position(|&i| i == cx.invariant));
    out
}

/// Per invariant, the first node (least depth) that breaks it.
type Firsts = Vec<(Invariant, u32)>;

/// The breadth-first construction of the graph.
struct Builder<'a, B> {
    model: &'a LeaseModel<B>,
    graph: Graph,
    out: GraphSearch<B>,
    first: Firsts,
    ids: FingerprintMap,
    groups: BTreeMap<Group, u32>,
    queue: VecDeque<State<B>>,
    actions: Actions,
    enabled: Vec<u32>,
}

fn explore<B: CheckedBroker>(
    model: &LeaseModel<B>,
    limits: &Limits,
    progress: Option<Progress<'_>>,
) -> (Graph, GraphSearch<B>, Firsts) {
    let mut b = Builder {
        model,
        graph: Graph {
            tree: vec![(0, None)],
            flags: Vec::new(),
            edge_start: vec![0],
            edges: Vec::new(),
            enabled_start: vec![0],
            enabled: Vec::new(),
        },
        out: GraphSearch {
            exploration: Exploration::default(),
            found: Vec::new(),
            cycles: 0,
            fair_cycles: 0,
            edges: 0,
        },
        first: Vec::new(),
        ids: FingerprintMap::default(),
        groups: BTreeMap::new(),
        queue: VecDeque::new(),
        actions: Actions::new(),
        enabled: Vec::new(),
    };
    let init = model.init_state(true);
    b.ids.id_or_insert(fingerprint(&init));
    b.graph.flags.push(flags(&init));
    b.queue.push_back(init);
    let (mut node, mut depth, mut level_end) = (0u32, 0u32, 1usize);
    while let Some(state) = b.queue.pop_front() {
        if node as usize == level_end {
            depth += 1;
            level_end = b.ids.len();
        }
        b.expand(node, &state);
        node += 1;
        if let Some(progress) = progress.filter(|_| node % (1 << 14) == 0) {
            progress(Counts {
                generated: b.out.exploration.counts.generated,
                unique: b.ids.len() as u64,
            });
        }
        let generated = b.out.exploration.counts.generated;
        if generated >= limits.states_max {
            b.out.exploration.bounded = Some(limits.states_max);
            break;
        }
        if node % (1 << 12) == 0 && !b.queue.is_empty() && limits.interrupt.raised() {
            b.out.exploration.bounded = Some(generated);
            b.out.exploration.interrupted = true;
            break;
        }
    }
    let (mut graph, mut out) = (b.graph, b.out);
    out.exploration.counts.unique = b.ids.len() as u64;
    out.exploration.max_depth = depth;
    out.exploration.table_bytes = b.ids.bytes();
    // Nodes discovered but not expanded (bounded search) have no edges.
    while graph.edge_start.len() <= graph.flags.len() {
        graph.edge_start.push(graph.edges.len() as u32);
        graph.enabled_start.push(graph.enabled.len() as u32);
    }
    (graph, out, b.first)
}

impl<B: CheckedBroker> Builder<'_, B> {
    /// Adds `node`'s edges, its enabled groups and its new successors.
    fn expand(&mut self, node: u32, state: &State<B>) {
        let model = self.model;
        model.actions(state, &mut self.actions);
        let flag = self.graph.flags[node as usize];
        if self.actions.is_empty() && flag & VIOLATING == 0 {
            self.out.exploration.terminal += 1;
            if flag & SETTLED == 0 {
                self.out.exploration.unsettled_terminal = true;
                if !self.first.iter().any(|(i, _)| *i == Invariant::I6) {
                    self.first.push((Invariant::I6, node));
                }
            }
        }
        self.enabled.clear();
        for index in 0..self.actions.len() {
            let action = self.actions[index];
            let group = group_of(state, action).map_or(NO_GROUP, |g| {
                let next = self.groups.len() as u32;
                *self.groups.entry(g).or_insert(next)
            });
            if group != NO_GROUP {
                self.enabled.push(group);
            }
            let (next, witness) = model.successor(state, action);
            self.out.exploration.counts.generated += 1;
            self.out.exploration.witnessed |= witness;
            let (to, new) = self.ids.id_or_insert(fingerprint(&next));
            if new {
                self.discovered(node, action, to, next);
            }
            self.graph.edges.push(Edge { to, group, action });
        }
        self.enabled.sort_unstable();
        self.enabled.dedup();
        self.graph.enabled.extend_from_slice(&self.enabled);
        self.graph
            .enabled_start
            .push(self.graph.enabled.len() as u32);
        self.graph.edge_start.push(self.graph.edges.len() as u32);
    }

    /// A state seen for the first time, as node `to`, by `action` from `from`.
    fn discovered(&mut self, from: u32, action: Action, to: u32, next: State<B>) {
        self.graph.tree.push((from, Some(action)));
        let flag = flags(&next);
        self.graph.flags.push(flag);
        if flag & VIOLATING != 0 {
            self.out.exploration.violated |= LeaseModel::violation_bits(&next);
            for invariant in SAFETY {
                if next.oracle.violated(invariant)
                    && !self.first.iter().any(|(i, _)| *i == invariant)
                {
                    self.first.push((invariant, to));
                }
            }
        }
        self.queue.push_back(next);
    }
}

fn flags<B: CheckedBroker>(state: &State<B>) -> u8 {
    let mut flags = 0;
    if LeaseModel::settled(state) {
        flags |= SETTLED;
    }
    if LeaseModel::violating(state) {
        flags |= VIOLATING;
    }
    flags
}

/// Tarjan's bookkeeping.
struct Tarjan {
    index: Vec<u32>,
    low: Vec<u32>,
    on_stack: Vec<bool>,
    stack: Vec<u32>,
    /// The explicit call stack: (node, next edge to look at).
    calls: Vec<(u32, u32)>,
    counter: u32,
}

const UNSEEN: u32 = u32::MAX;

impl Tarjan {
    fn visit(&mut self, graph: &Graph, v: u32) {
        self.index[v as usize] = self.counter;
        self.low[v as usize] = self.counter;
        self.counter += 1;
        self.on_stack[v as usize] = true;
        self.stack.push(v);
        self.calls.push((v, graph.edge_start[v as usize]));
    }

    /// Pops the component rooted at `v` into `component`.
    fn pop_component(&mut self, v: u32, component: &mut Vec<u32>) {
        component.clear();
        loop {
            let w = self.stack.pop().expect("v is on the stack");
            self.on_stack[w as usize] = false;
            component.push(w);
            if w == v {
                break;
            }
        }
    }
}

/// Calls `f` with every non-trivial strongly connected component of the live subgraph
/// (Tarjan's algorithm, iterative: the recursion would overflow at millions of states).
fn strongly_connected(graph: &Graph, mut f: impl FnMut(&[u32], &Graph)) {
    let n = graph.flags.len();
    let mut t = Tarjan {
        index: vec![UNSEEN; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        calls: Vec::new(),
        counter: 0,
    };
    let mut component = Vec::new();
    for root in 0..n as u32 {
        if !graph.live(root) || t.index[root as usize] != UNSEEN {
            continue;
        }
        t.visit(graph, root);
        while let Some(&(v, next_edge)) = t.calls.last() {
            if next_edge < graph.edge_start[v as usize + 1] {
                t.calls.last_mut().expect("non-empty").1 += 1;
                let w = graph.edges[next_edge as usize].to;
                if !graph.live(w) {
                    continue;
                }
                if t.index[w as usize] == UNSEEN {
                    t.visit(graph, w);
                } else if t.on_stack[w as usize] {
                    t.low[v as usize] = t.low[v as usize].min(t.index[w as usize]);
                }
                continue;
            }
            t.calls.pop();
            if let Some(&(parent, _)) = t.calls.last() {
                t.low[parent as usize] = t.low[parent as usize].min(t.low[v as usize]);
            }
            if t.low[v as usize] == t.index[v as usize] {
                t.pop_component(v, &mut component);
                let trivial = component.len() == 1 && !graph.edges(v).iter().any(|e| e.to == v);
                if !trivial {
                    component.sort_unstable();
                    f(&component, graph);
                }
            }
        }
    }
}

/// Per group enabled somewhere in `component`: in how many of its states.
fn enabled_counts(graph: &Graph, component: &[u32]) -> BTreeMap<u32, usize> {
    let mut counts = BTreeMap::new();
    for &node in component {
        for &group in graph.enabled(node) {
            *counts.entry(group).or_insert(0) += 1;
        }
    }
    counts
}

fn inside(component: &[u32], node: u32) -> bool {
    component.binary_search(&node).is_ok()
}

/// Whether `component` holds a weakly fair cycle: every group enabled in all its states
/// labels one of its inner edges.
fn fair(graph: &Graph, component: &[u32]) -> bool {
    let taken: BTreeSet<u32> = component
        .iter()
        .flat_map(|&node| graph.edges(node))
        .filter(|e| inside(component, e.to))
        .map(|e| e.group)
        .collect();
    enabled_counts(graph, component)
        .into_iter()
        .all(|(group, count)| count < component.len() || taken.contains(&group))
}

/// A goal for the loop: reach a state, or take an edge of a group.
#[derive(Clone, Copy)]
enum Goal {
    Visit(u32),
    Take(u32),
}

/// The lasso through `component` (see the module documentation).
fn witness(graph: &Graph, component: &[u32], fairness: Fairness) -> Counterexample {
    let entry = component[0];
    let prefix = path_to(&graph.tree, entry);
    let mut goals = Vec::new();
    if fairness == Fairness::Weak {
        for (group, count) in enabled_counts(graph, component) {
            if count == component.len() {
                goals.push(Goal::Take(group));
            } else {
                let off = component
                    .iter()
                    .copied()
                    .find(|&n| !graph.enabled(n).contains(&group))
                    .expect("disabled somewhere");
                goals.push(Goal::Visit(off));
            }
        }
    }
    let mut cycle: Vec<Edge> = Vec::new();
    let mut at = entry;
    for goal in goals {
        let met = match goal {
            Goal::Visit(node) => node == entry || cycle.iter().any(|e| e.to == node),
            Goal::Take(group) => cycle.iter().any(|e| e.group == group),
        };
        if !met {
            let path = route(graph, component, at, goal);
            at = path.last().map_or(at, |e| e.to);
            cycle.extend(path);
        }
    }
    let back = route(graph, component, at, Goal::Visit(entry));
    cycle.extend(back);
    if cycle.is_empty() {
        // The entry on its own: leave it by any inner edge and come back.
        let step = *graph
            .edges(entry)
            .iter()
            .find(|e| inside(component, e.to))
            .expect("a non-trivial component");
        cycle.push(step);
        cycle.extend(route(graph, component, step.to, Goal::Visit(entry)));
    }
    let mut actions = prefix;
    let loop_start = actions.len();
    actions.extend(cycle.iter().map(|e| e.action));
    Counterexample {
        invariant: Invariant::I6,
        actions,
        loop_start: Some(loop_start),
    }
}

/// A shortest path inside `component` from `from` that meets `goal` (for `Take`, ending with
/// an edge of that group).
fn route(graph: &Graph, component: &[u32], from: u32, goal: Goal) -> Vec<Edge> {
    if let Goal::Visit(node) = goal {
        if node == from {
            return Vec::new();
        }
    }
    let mut parent: BTreeMap<u32, (u32, Edge)> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    let rebuild = |parent: &BTreeMap<u32, (u32, Edge)>, mut node: u32, last: Option<Edge>| {
        let mut path: Vec<Edge> = last.into_iter().collect();
        while node != from {
            let (previous, edge) = parent[&node];
            path.push(edge);
            node = previous;
        }
        path.reverse();
        path
    };
    while let Some(node) = queue.pop_front() {
        for &edge in graph.edges(node) {
            if !inside(component, edge.to) {
                continue;
            }
            match goal {
                Goal::Take(group) if edge.group == group => {
                    return rebuild(&parent, node, Some(edge));
                }
                Goal::Visit(target) if edge.to == target => {
                    return rebuild(&parent, node, Some(edge));
                }
                _ => {}
            }
            if seen.insert(edge.to) {
                parent.insert(edge.to, (node, edge));
                queue.push_back(edge.to);
            }
        }
    }
    unreachable!("a strongly connected component connects every pair of its states")
}
