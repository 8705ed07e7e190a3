//! The two engines behind [`EngineRun`]: the model checker and the simulator.

use super::matrix::{Engine, EngineRun};

/// The engines this build can run, or the names of those it lacks (then the report refuses to
/// run rather than print cells it cannot fill).
pub fn engines(_threads: usize) -> Result<Vec<Box<dyn EngineRun>>, Vec<String>> {
    let missing = vec![
        format!(
            "{} (the model checker is not wired into this build)",
            Engine::Check
        ),
        format!(
            "{} (the simulator is not wired into this build)",
            Engine::Sim
        ),
    ];
    Err(missing)
}

/// One line per engine describing its bounds at `depth`, for the report's header.
pub fn bounds(depth: super::matrix::Depth) -> Vec<(Engine, String)> {
    let _ = depth;
    Vec::new()
}
