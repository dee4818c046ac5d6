use cubecl::{
    prelude::*,
    std::tensor::{ViewMut, layout::Coords2d},
};

use crate::{
    definition::StageIdent,
    multi_level::{
        components::{
            global::{
                GlobalWriter, GlobalWriterConfig, GlobalWriterFamily, PartitionedStage,
                PartitionedStageFamily, WriteEvent, WriteEventExpand, WriteEventListener,
                read::tiled::{TiledCoords, TiledLayout},
            },
            stage::{UnitPartitioner, partition_coordinates},
        },
        definition::MatrixTypes,
        stage::StageMemoryConfig,
        tile::StridedTile,
    },
};

#[derive(CubeType)]
/// Writes tiles from out shared memory to output global memory
/// using a unit for each tile
pub struct UnitWriter<'a, IP: MatrixTypes> {
    global: ViewMut<'a, Vector<IP::Global, IP::GlobalSize>, TiledCoords>,
    stage: PartitionedStage<IP::Stage, IP::StageSize>,

    #[cube(comptime)]
    smem_config: StageMemoryConfig,
}

#[cube]
impl<'a, IP: MatrixTypes> UnitWriter<'a, IP> {
    pub fn new(
        global: ViewMut<'a, Vector<IP::Global, IP::GlobalSize>, Coords2d>,
        #[comptime] config: GlobalWriterConfig,
    ) -> Self {
        let smem_config = config.smem_config;
        let stage = PartitionedStage::new(
            partition_coordinates::<UnitPartitioner>(
                config.plane_flow_partition_rule,
                config.plane_dim,
                smem_config.partitions_per_stage_along_col,
            ),
            smem_config,
        );

        UnitWriter::<'a, IP> {
            global: global.view_mut(TiledLayout::new(StageIdent::Out, smem_config)),
            stage,
            smem_config,
        }
    }

    fn write(&mut self, tile: Coords2d) {
        unit_write(
            &mut self.global,
            &self.stage.unit_tile,
            tile,
            self.smem_config.comptime().elements_per_tile(),
        )
    }
}

#[cube]
pub fn unit_write<ES: Numeric, NS: Size, EG: Numeric, NG: Size>(
    global: &mut ViewMut<Vector<EG, NG>, TiledCoords>,
    smem_tile: &StridedTile<ES, NS>,
    tile_pos: Coords2d,
    #[comptime] elements_in_tile: u32,
) {
    let output_vector_size = global.vector_size();
    let out_smem_stage = smem_tile.container.with_vector_size::<NG>();

    let num_vectors = elements_in_tile / output_vector_size as u32;

    for i in 0..num_vectors {
        let value = out_smem_stage[smem_tile.stage_offset(i) as usize];
        global.write_checked(
            (tile_pos, i * output_vector_size as u32),
            Vector::cast_from(value),
        );
    }
}

#[cube]
impl<IP: MatrixTypes> WriteEventListener for UnitWriter<'_, IP> {
    fn on_event(this: &mut Self, event: super::WriteEvent) {
        #[allow(clippy::single_match)]
        match event {
            WriteEvent::TileStored { tile } => this.write(tile),
            _ => {}
        }
    }
}

#[cube]
impl<'a, IP: MatrixTypes> GlobalWriter<'a, IP> for UnitWriter<'a, IP> {
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

pub struct UnitWriterFamily;

impl GlobalWriterFamily for UnitWriterFamily {
    type Stage = PartitionedStageFamily;
    type Writer<'a, IP: MatrixTypes> = UnitWriter<'a, IP>;
}
