//! What a Vulkan device is opened with ([`VulkanOptions`]): how its buffers use the device's
//! memory types ([`VulkanMemoryMode`]), from the caller or the environment.

use crate::status::StatusError;

/// How a device uses its memory types: as the driver reports them, or with a property taken
/// away so that tests exercise the paths a device without it needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VulkanMemoryMode {
    /// The memory types as the driver reports them (`default`).
    #[default]
    AsReported,
    /// Device-local memory treated as not host-visible (`device-local-only`), as on a
    /// discrete GPU: buffers in it are reached by the host through staging buffers.
    DeviceLocalOnly,
    /// Every memory type treated as not host-coherent (`non-coherent`): mapped memory is
    /// flushed and invalidated around each submission.
    NonCoherent,
}

impl VulkanMemoryMode {
    /// The environment variable [`VulkanOptions::from_env`] reads the mode from.
    pub const ENV: &'static str = "PACTUM_VULKAN_MEMORY";

    /// Every mode, with its name.
    pub const ALL: [(VulkanMemoryMode, &'static str); 3] = [
        (VulkanMemoryMode::AsReported, "default"),
        (VulkanMemoryMode::DeviceLocalOnly, "device-local-only"),
        (VulkanMemoryMode::NonCoherent, "non-coherent"),
    ];

    /// The mode's name (`default`, `device-local-only`, `non-coherent`).
    pub fn name(self) -> &'static str {
        VulkanMemoryMode::ALL
            .iter()
            .find(|(mode, _)| *mode == self)
            .map_or("default", |(_, name)| name)
    }

    /// The mode a name stands for; `INVALID_ARGUMENT` listing the names otherwise.
    pub fn parse(name: &str) -> Result<VulkanMemoryMode, StatusError> {
        VulkanMemoryMode::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(mode, _)| *mode)
            .ok_or_else(|| {
                StatusError::invalid_argument(format!(
                    "vulkan memory mode '{name}': expected one of {}",
                    VulkanMemoryMode::ALL
                        .iter()
                        .map(|(_, n)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

/// What a [`VulkanDevice`](super::VulkanDevice) is opened with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VulkanOptions {
    /// How buffers use the device's memory types.
    pub memory: VulkanMemoryMode,
}

impl VulkanOptions {
    /// The options the environment gives: the memory mode named by
    /// `PACTUM_VULKAN_MEMORY` ([`VulkanMemoryMode::ENV`]; unset or empty: `default`).
    /// `INVALID_ARGUMENT` for a name that is not a mode's.
    pub fn from_env() -> Result<VulkanOptions, StatusError> {
        let memory = match std::env::var(VulkanMemoryMode::ENV) {
            Ok(name) if !name.is_empty() => VulkanMemoryMode::parse(&name).map_err(|e| {
                StatusError::invalid_argument(format!("{}: {}", VulkanMemoryMode::ENV, e.message))
            })?,
            _ => VulkanMemoryMode::AsReported,
        };
        Ok(VulkanOptions { memory })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_modes_parse_by_name_and_refuse_others() {
        for (mode, name) in VulkanMemoryMode::ALL {
            assert_eq!(VulkanMemoryMode::parse(name).unwrap(), mode);
            assert_eq!(mode.name(), name);
        }
        let error = VulkanMemoryMode::parse("device-local").unwrap_err();
        assert!(
            error
                .message
                .contains("expected one of default, device-local-only, non-coherent"),
            "{error}"
        );
    }
}
