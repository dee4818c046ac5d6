use crate::{
    definition::{MatmulElems, MatmulProblem, MatmulSetupError, MatmulVectorSizes, StageIdent},
    multi_level::{
        args::RuntimeConfig,
        components::{
            CubeDimResource,
            global::{
                GlobalMatmulFamily, GlobalReaderConfig, GlobalWriterConfig, GlobalWriterFamily,
                MaxGlobalReaderPlanes, SharedGlobalMatmulConfig, make_plane_flow_config,
                memory::{GlobalMemoryConfig, ViewDirection},
                multi_stage::{
                    EventLoadingMode,
                    ordered::{LL, OrderedDoubleBufferingMatmul},
                },
                read::{
                    FullLoadingStrategy, LoadingValidation as _, PartialLoadingStrategy,
                    sync::Synchronous,
                },
            },
            stage::{NumStages, StagePartitioner},
        },
        definition::{BatchMatmulBlueprint, MatmulTypes},
    },
};
use cubecl::{ir::DeviceProperties, prelude::*};
use cubek_std::MatrixLayout;
use std::marker::PhantomData;

/// Ordered double buffering matmul family for any precision
pub struct OrderedDoubleBufferingMatmulFamily<
    SP: StagePartitioner,
    RC: RuntimeConfig,
    RL: PartialLoadingStrategy<RC>,
    AL: FullLoadingStrategy<RC>,
    GW: GlobalWriterFamily,
> {
    _sp: PhantomData<SP>,
    _rc: PhantomData<RC>,
    _rhs_loading: PhantomData<RL>,
    _acc_loading: PhantomData<AL>,
    _writer: PhantomData<GW>,
}

impl<SP, RC, RL, AL, GW> GlobalMatmulFamily<RC>
    for OrderedDoubleBufferingMatmulFamily<SP, RC, RL, AL, GW>
where
    SP: StagePartitioner,
    RC: RuntimeConfig,
    RL: PartialLoadingStrategy<RC, SyncStrategy = Synchronous>,
    AL: FullLoadingStrategy<RC, SyncStrategy = Synchronous>,
    GW: GlobalWriterFamily,
{
    type Matmul<MP: MatmulTypes> = OrderedDoubleBufferingMatmul<MP, SP, RC, RL, AL, GW>;
    type Config = SharedGlobalMatmulConfig;

    fn expand_config(
        device_props: &DeviceProperties,
        blueprint: &BatchMatmulBlueprint,
        dtypes: &MatmulElems,
        vector_sizes: &MatmulVectorSizes,
    ) -> Result<Self::Config, MatmulSetupError> {
        let plane_dim = blueprint.plane_dim;
        let plane_flow_config =
            Self::cubedim_resource(blueprint, dtypes, vector_sizes)?.as_specialized(plane_dim)?;

        let stage_config = SP::KIND.expand_stage_matmul(
            device_props,
            blueprint,
            plane_flow_config,
            Self::num_stages(),
            dtypes,
            vector_sizes,
        )?;

        let precompute_job = blueprint.loading_precompute_strategy.into();
        let reader_mode = blueprint.reader_mode;

        let lhs_gmem_config = GlobalMemoryConfig {
            vector_size: vector_sizes.lhs,
            check_row_bounds: blueprint.check_m_bounds,
            check_col_bounds: blueprint.check_k_bounds,
            matrix_layout: blueprint.lhs_layout,
            view_direction: ViewDirection::Col,
            dtype: dtypes.lhs_global,
        };

        let rhs_gmem_config = GlobalMemoryConfig {
            vector_size: vector_sizes.rhs,
            check_row_bounds: blueprint.check_k_bounds,
            check_col_bounds: blueprint.check_n_bounds,
            matrix_layout: blueprint.rhs_layout,
            view_direction: ViewDirection::Row,
            dtype: dtypes.rhs_global,
        };

        let out_gmem_config = GlobalMemoryConfig {
            vector_size: vector_sizes.out,
            matrix_layout: MatrixLayout::RowMajor,
            check_row_bounds: blueprint.check_m_bounds,
            check_col_bounds: blueprint.check_n_bounds,
            view_direction: ViewDirection::None,
            dtype: dtypes.acc_global,
        };

        let lhs_reader_config = GlobalReaderConfig {
            gmem_config: lhs_gmem_config,
            smem_config: stage_config.lhs_smem_config(),
            precompute_job,
            plane_dim,
            plane_flow_config,
            reader_mode,
            stage_ident: StageIdent::Lhs,
            event_loading_mode: EventLoadingMode::Ordered,
            input_load_flow: blueprint.load_flows.lhs,
        };

        let rhs_reader_config = GlobalReaderConfig {
            gmem_config: rhs_gmem_config,
            smem_config: stage_config.rhs_smem_config(),
            precompute_job,
            plane_dim,
            plane_flow_config,
            reader_mode,
            stage_ident: StageIdent::Rhs,
            event_loading_mode: EventLoadingMode::Relaxed,
            input_load_flow: blueprint.load_flows.rhs,
        };

        let acc_reader_config = GlobalReaderConfig {
            gmem_config: out_gmem_config,
            smem_config: stage_config.acc_smem_config(),
            precompute_job,
            plane_dim,
            plane_flow_config,
            reader_mode,
            stage_ident: StageIdent::Acc,
            event_loading_mode: EventLoadingMode::Relaxed,
            input_load_flow: blueprint.load_flows.rhs,
        };

        let writer_config = GlobalWriterConfig {
            gmem_config: out_gmem_config,
            smem_config: stage_config.out_smem_config(),
            plane_flow_partition_rule: plane_flow_config.partition_rule,
            plane_dim: blueprint.plane_dim,
        };

        // The readers' config constraints, checked here: where a violation is
        // a recoverable setup error the tuner can skip and a dispatch can
        // degrade on. The kernel re-checks them at comptime, but an error
        // raised there only surfaces as an asynchronous compile failure at the
        // next flush (e.g. ordered loading on a plane-64 device whose stage
        // leaves fewer vectors per plane than units), which no caller can
        // recover from.
        LL::validate_with_config(device_props, &lhs_reader_config)?;
        RL::validate_with_config(device_props, &rhs_reader_config)?;

        GW::validate_with_config(&writer_config)?;

        Ok(SharedGlobalMatmulConfig {
            stage_config,
            num_planes: plane_flow_config.counts.total_count(),
            lhs_reader_config,
            rhs_reader_config,
            acc_reader_config,
            writer_config,
            must_sync_plane_after_execution: true,
        })
    }

    fn num_stages() -> NumStages {
        (1, 2).into()
    }

    fn cubedim_resource(
        blueprint: &BatchMatmulBlueprint,
        dtypes: &MatmulElems,
        vector_sizes: &MatmulVectorSizes,
    ) -> Result<CubeDimResource, MatmulSetupError> {
        let max_global_readers = blueprint.load_flows.has_specialization().then(|| {
            MaxGlobalReaderPlanes::new::<LL, RL>(
                &blueprint.tiling_scheme,
                vector_sizes,
                blueprint.plane_dim,
                dtypes,
            )
        });

        let plane_dim = blueprint.plane_dim;
        let plane_flow_config = make_plane_flow_config(
            blueprint.load_flows,
            max_global_readers,
            SP::KIND
                .cubedim_resource(blueprint)?
                .num_planes(plane_dim)?,
        )?;

        Ok(CubeDimResource::Specialized(plane_flow_config))
    }

    fn validate_blueprint(
        client: &Client,
        blueprint: &BatchMatmulBlueprint,
        problem: &MatmulProblem,
        dtypes: &MatmulElems,
        vector_sizes: &MatmulVectorSizes,
    ) -> Result<(), MatmulSetupError> {
        LL::validate_with_problem(problem, dtypes, StageIdent::Lhs)?;
        RL::validate_with_problem(problem, dtypes, StageIdent::Rhs)?;

        if blueprint.tiling_scheme.partitions_per_stage_along_n() > 1 {
            return Err(MatmulSetupError::InvalidConfig(Box::new(
                "Ordered does not support number of stage partitions > 1 in n",
            )));
        }

        SP::KIND.validate_blueprint(client, blueprint, dtypes, vector_sizes)
    }
}
