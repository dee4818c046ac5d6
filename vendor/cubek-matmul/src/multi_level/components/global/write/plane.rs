use crate::{
    definition::StageIdent,
    multi_level::{
        components::{
            global::{
                GlobalWriter, GlobalWriterConfig, GlobalWriterFamily, PartitionedStage,
                PartitionedStageFamily, WriteEvent, WriteEventExpand, WriteEventListener,
                read::tiled::{TiledCoords, TiledLayout},
            },
            stage::{PlanePartitioner, partition_coordinates},
        },
        definition::MatrixTypes,
        stage::StageMemoryConfig,
        tile::StridedTile,
    },
};
use cubecl::{
    prelude::*,
    std::tensor::{ViewMut, layout::Coords2d},
};

use cubek_std::InvalidConfigError;

#[derive(CubeType)]
/// Writes tiles from out shared memory to output global memory
/// using a plane for each tile
pub struct PlaneWriter<'a, IP: MatrixTypes> {
    global: ViewMut<'a, Vector<IP::Global, IP::GlobalSize>, TiledCoords>,
    stage: PartitionedStage<IP::Stage, IP::StageSize>,

    #[cube(comptime)]
    plane_dim: u32,
    #[cube(comptime)]
    smem_config: StageMemoryConfig,
}

#[cube]
impl<'a, IP: MatrixTypes> PlaneWriter<'a, IP> {
    pub fn new(
        global: ViewMut<'a, Vector<IP::Global, IP::GlobalSize>, Coords2d>,
        #[comptime] config: GlobalWriterConfig,
    ) -> Self {
        let stage = PartitionedStage::new(
            partition_coordinates::<PlanePartitioner>(
                config.plane_flow_partition_rule,
                config.plane_dim,
                config.smem_config.partitions_per_stage_along_col,
            ),
            config.smem_config,
        );

        PlaneWriter::<'a, IP> {
            global: global.view_mut(TiledLayout::new(StageIdent::Out, config.smem_config)),
            stage,
            plane_dim: config.plane_dim,
            smem_config: config.smem_config,
        }
    }

    fn write(&mut self, tile_pos: Coords2d) {
        plane_write::<IP::Stage, IP::StageSize, IP::Global, IP::GlobalSize>(
            &mut self.global,
            &self.stage.unit_tile,
            tile_pos,
            self.plane_dim,
            self.smem_config.comptime().elements_per_tile(),
        )
    }
}

#[cube]
impl<IP: MatrixTypes> WriteEventListener for PlaneWriter<'_, IP> {
    fn on_event(this: &mut Self, event: super::WriteEvent) {
        #[allow(clippy::single_match)]
        match event {
            WriteEvent::TileStored { tile } => {
                this.write(tile);
            }
            _ => {}
        }
    }
}

#[cube]
impl<'a, IP: MatrixTypes> GlobalWriter<'a, IP> for PlaneWriter<'a, IP> {
    type Stage = PartitionedStage<IP::Stage, IP::StageSize>;

    fn init(
        tensor: ViewMut<'a, Vector<IP::Global, IP::GlobalSize>, Coords2d>,
        #[comptime] config: GlobalWriterConfig,
    ) -> Self {
        Self::new(tensor, config)
    }

    fn stage(this: &Self) -> Self::Stage {
        this.stage.clone()
    }
}

#[cube]
pub fn plane_write<ES: Numeric, NS: Size, EG: Numeric, NG: Size>(
    global: &mut ViewMut<Vector<EG, NG>, TiledCoords>,
    smem_tile: &StridedTile<ES, NS>,
    tile_pos: Coords2d,
    #[comptime] plane_dim: u32,
    #[comptime] elements_in_tile: u32,
) {
    let output_vector_size = global.vector_size().comptime();

    // Units read vectors other units stored.
    sync_plane();

    let unit_step = plane_dim * output_vector_size as u32;
    let num_unit_writes = elements_in_tile.div_ceil(unit_step);
    let balanced_workload = elements_in_tile.is_multiple_of(unit_step);

    #[unroll(num_unit_writes == 1)]
    for i in 0..num_unit_writes {
        let unit_write = UNIT_POS_X * output_vector_size as u32 + i * unit_step;

        #[allow(clippy::collapsible_else_if)]
        if balanced_workload {
            write_vector(global, smem_tile, unit_write, tile_pos);
        } else {
            if unit_write < elements_in_tile {
                write_vector(global, smem_tile, unit_write, tile_pos);
            }
        }
    }

    // The next tile is stored into the same memory.
    sync_plane();
}

#[cube]
fn write_vector<ES: Numeric, NS: Size, EG: Numeric, NG: Size>(
    view: &mut ViewMut<Vector<EG, NG>, TiledCoords>,
    out_smem_tile: &StridedTile<ES, NS>,
    unit_write: u32,
    tile: Coords2d,
) {
    let output_vector_size = view.vector_size().comptime();
    let out_smem_vector_size = out_smem_tile.container.vector_size().comptime();

    let value = if output_vector_size == out_smem_vector_size {
        let offs = out_smem_tile.stage_offset(unit_write / output_vector_size as u32);
        out_smem_tile.container[offs as usize]
    } else if out_smem_vector_size < output_vector_size
        && output_vector_size.is_multiple_of(out_smem_vector_size)
    {
        let mut value = Vector::empty();
        #[unroll]
        for i in 0..output_vector_size / out_smem_vector_size {
            let offs = out_smem_tile.stage_offset(unit_write + i as u32);
            #[unroll]
            for j in 0..out_smem_vector_size {
                value.insert(
                    i * out_smem_vector_size + j,
                    out_smem_tile.container[offs as usize].extract(j),
                );
            }
        }
        value
    } else {
        unimplemented!()
    };

    view.write_checked((tile, unit_write), Vector::cast_from(value));
}

pub struct PlaneWriterFamily;

impl GlobalWriterFamily for PlaneWriterFamily {
    type Stage = PartitionedStageFamily;
    type Writer<'a, IP: MatrixTypes> = PlaneWriter<'a, IP>;

    fn validate_with_config(config: &GlobalWriterConfig) -> Result<(), InvalidConfigError> {
        let tile_width = config.smem_config.elements_per_tile_along_contiguous_dim() as usize;
        let vector_size = config.gmem_config.vector_size;

        // Each write belongs to one tile row. A wider vector would spill into
        // another row in shared memory but contiguous columns in global memory.
        if !tile_width.is_multiple_of(vector_size) {
            return Err(Box::new(format!(
                "Plane writer tile width ({tile_width}) must be divisible by output vector size ({vector_size})"
            )));
        }

        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multi_level::{
        components::global::{
            PlaneFlowPartitionRule,
            memory::{GlobalMemoryConfig, ViewDirection},
        },
        stage::SwizzleMode,
    };
    use cubecl::ir::{ElemType, FloatKind};
    use cubek_std::MatrixLayout;

    fn writer_config(tile_width: u32, vector_size: usize) -> GlobalWriterConfig {
        let dtype = ElemType::Float(FloatKind::F16);
        GlobalWriterConfig {
            gmem_config: GlobalMemoryConfig {
                vector_size,
                check_row_bounds: true,
                check_col_bounds: true,
                matrix_layout: MatrixLayout::RowMajor,
                view_direction: ViewDirection::None,
                dtype,
            },
            smem_config: StageMemoryConfig {
                num_planes: 1,
                elements_per_tile_along_row: 16,
                elements_per_tile_along_col: tile_width,
                tiles_per_partition_along_row: 2,
                tiles_per_partition_along_col: 4,
                partitions_per_stage_along_row: 2,
                partitions_per_stage_along_col: 1,
                vector_size: vector_size as u32,
                matrix_layout: MatrixLayout::RowMajor,
                swizzle: SwizzleMode::None,
                num_stages: 1,
                dtype,
            },
            plane_flow_partition_rule: PlaneFlowPartitionRule::MainFlowOnly,
            plane_dim: 32,
        }
    }

    #[test]
    fn rejects_output_vectors_crossing_tile_rows() {
        // Masked f16 matmul fusion can choose 16-wide vectors with 16x8 MMA
        // tiles. The partition is wide enough, but each write addresses one tile.
        let config = writer_config(8, 16);
        let err = PlaneWriterFamily::validate_with_config(&config).unwrap_err();
        assert!(err.to_string().contains("tile width (8)"));
        assert!(err.to_string().contains("output vector size (16)"));
    }

    #[test]
    fn accepts_output_vectors_dividing_tile_rows() {
        for (tile_width, vector_size) in [(8, 1), (8, 4), (8, 8), (16, 16)] {
            PlaneWriterFamily::validate_with_config(&writer_config(tile_width, vector_size))
                .unwrap_or_else(|err| panic!("{err}"));
        }
    }
}
