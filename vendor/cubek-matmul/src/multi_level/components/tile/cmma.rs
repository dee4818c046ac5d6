use cubecl::{features::MmaConfig, ir::DeviceProperties, prelude::*};
use cubek_std::InvalidConfigError;

use crate::{
    definition::{MatmulAvailabilityError, MatmulElems, MatmulSetupError, MatmulVectorSizes},
    multi_level::{
        CubeDimResource, TileSize,
        definition::BatchMatmulBlueprint,
        stage::SwizzleModes,
        tile::{Plane, TileScope},
    },
};

use super::variant::TileVariant;

#[derive(Copy, Clone, Eq, PartialEq, Hash, Debug)]
pub struct CmmaMatmul {
    pub tile_size: TileSize,
    pub plane_dim: u32,
    pub swizzle_modes: SwizzleModes,
}

impl CmmaMatmul {
    pub fn new(tile_size: TileSize, plane_dim: u32, swizzle_modes: SwizzleModes) -> Self {
        Self {
            tile_size,
            plane_dim,
            swizzle_modes,
        }
    }
}

impl TileVariant for CmmaMatmul {
    fn requires_accelerator() -> bool {
        true
    }

    fn can_cast_stage_element() -> bool {
        false
    }

    fn should_swizzle(_client: &Client) -> bool {
        false
    }

    fn cubedim_resource() -> Result<CubeDimResource, InvalidConfigError> {
        Ok(Plane::default_resource())
    }

    fn is_supported(client: &Client, config: MmaConfig) -> bool {
        client.properties().features.matmul.cmma.contains(&config)
    }

    fn supported_sizes(
        client: &Client,
        lhs_ty: ElemType,
        rhs_ty: ElemType,
        acc_ty: ElemType,
    ) -> Vec<TileSize> {
        client
            .properties()
            .features
            .matmul
            .cmma
            .iter()
            .filter(|it| it.a_type == lhs_ty && it.b_type == rhs_ty && it.cd_type == acc_ty)
            .map(|it| (it.m, it.n, it.k).into())
            .collect()
    }

    fn expand(
        _device_props: &DeviceProperties,
        blueprint: &BatchMatmulBlueprint,
        _dtypes: &MatmulElems,
        _vector_sizes: &MatmulVectorSizes,
    ) -> Self {
        Self::new(
            blueprint.tiling_scheme.tile_size,
            blueprint.plane_dim,
            blueprint.swizzle_modes,
        )
    }

    fn validate(
        client: &Client,
        blueprint: &BatchMatmulBlueprint,
        dtypes: &MatmulElems,
        _vector_sizes: &MatmulVectorSizes,
    ) -> Result<(), MatmulSetupError> {
        let lhs = dtypes.lhs_register;
        let rhs = dtypes.rhs_register;
        let acc = dtypes.acc_register;

        let size = blueprint.tiling_scheme.tile_size;
        if !client
            .properties()
            .features
            .matmul
            .cmma
            .contains(&MmaConfig {
                a_type: lhs,
                b_type: rhs,
                cd_type: acc,
                m: size.m(),
                k: size.k(),
                n: size.n(),
            })
        {
            return Err(MatmulSetupError::Unavailable(
                MatmulAvailabilityError::CmmaInstructionUnavailable {
                    lhs,
                    rhs,
                    output: acc,
                    size: Some((size.m(), size.n(), size.k())),
                },
            ));
        }

        if blueprint.swizzle_modes.has_swizzle() {
            return Err(MatmulSetupError::InvalidConfig(Box::new(
                "This tile matmul doesn't support swizzling",
            )));
        }

        Ok(())
    }
}
