//! The `leasehold` command line with the fixed queue registered as `hosted`: a queue a suite
//! reaches at an address, as a server-backed backend reaches its server. `--url URL` hands the
//! address to the factory ([`BackendFactory::at_url`]), which names it in the reproducing
//! commands it prints and in the line after a campaign; `--spawn` is refused by the trait's
//! default (this queue starts no server of its own).

use leasehold::{Backend, BackendFactory, BackendKind, BrokerConfig};
use leasehold_example_queue::FixedQueue;
use std::sync::Arc;

/// The fixed queue, at the address `--url` gave (none: the suite's default one).
struct Hosted {
    url: Option<String>,
}

impl BackendFactory for Hosted {
    fn name(&self) -> &str {
        "hosted"
    }

    fn make(&self, config: &BrokerConfig) -> Result<Box<dyn Backend + Send>, String> {
        Ok(Box::new(FixedQueue::new(config)))
    }

    fn flags(&self) -> String {
        match &self.url {
            Some(url) => format!(" --backend hosted --url {url}"),
            None => " --backend hosted".to_string(),
        }
    }

    fn describe(&self) -> Option<String> {
        let url = self.url.as_deref().unwrap_or("its default address");
        Some(format!("hosted: the queue at {url}"))
    }

    fn at_url(&self, url: &str) -> Result<Arc<dyn BackendFactory>, String> {
        if !url.starts_with("queue://") {
            return Err(format!("--url: '{url}' is not a queue:// address"));
        }
        Ok(Arc::new(Hosted {
            url: Some(url.to_string()),
        }))
    }
}

fn main() -> std::process::ExitCode {
    leasehold::cli::main_with(&[
        BackendKind::new(Hosted { url: None }),
        leasehold_example_queue::fixed(),
    ])
}
