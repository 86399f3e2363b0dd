package dev.kiln.spark;

import org.apache.spark.ml.attribute.AttributeGroup;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** {@link KilnModel} in {@code local[2]}: results, compile-once, persistence, schema errors and bad rows. */
class SparkKilnModelTest {
    private static SparkSession spark;

    @BeforeAll
    static void start() { spark = SparkTestSessions.local("SparkKilnModelTest"); }

    @AfterAll
    static void stop() { spark.stop(); }

    private static KilnModel mlp(int batchSize) {
        return new KilnModel().setModelPath(MlpData.model().toString()).setInputCols("x", "offset").setBatchSize(batchSize);
    }

    /** Checks scored rows (any order) against Kiln run directly on the same inputs. */
    static void assertMatchesKiln(List<Row> scored, int n) {
        MlpData.Reference ref = MlpData.reference(n);
        assertThat(scored).hasSize(n);
        for (Row r : scored) {
            int id = (int) r.getLong(r.fieldIndex("id"));
            List<Float> logits = r.getList(r.fieldIndex("logits"));
            assertThat(logits).hasSize(3);
            for (int k = 0; k < 3; k++) assertThat(logits.get(k)).as("row %d logit %d", id, k).isCloseTo(ref.logits()[id][k], within(1e-5f));
            assertThat(r.<Long>getList(r.fieldIndex("label"))).as("row %d label", id).containsExactly(ref.labels()[id]);
        }
    }

    @Test
    void scoresRowForRowAsKilnDoesDirectlyWithTypedOutputs() {
        int n = 500;
        Dataset<Row> out = mlp(64).transform(MlpData.frame(spark, n, 4)); // ~125 rows a partition: the last batch is partial
        StructType s = out.schema();
        assertThat(s.apply("logits").dataType()).isEqualTo(DataTypes.createArrayType(DataTypes.FloatType, false));
        assertThat(s.apply("label").dataType()).isEqualTo(DataTypes.createArrayType(DataTypes.LongType, false));
        assertMatchesKiln(out.collectAsList(), n);
    }

    @Test
    void compilesOncePerJvmAcrossPartitionsTasksAndTransforms() {
        int before = ExecutorModels.compiles();
        KilnModel m = mlp(37); // a batch size no other test uses: its own cache entry
        assertThat(m.transform(MlpData.frame(spark, 300, 6)).count()).isEqualTo(300);
        assertThat(m.transform(MlpData.frame(spark, 200, 3)).collectAsList()).hasSize(200);
        assertThat(ExecutorModels.compiles() - before).as("compiles in this JVM (local mode: the executor)").isEqualTo(1);
        assertThat(ExecutorModels.replicaCounts()).allSatisfy(c -> assertThat(c).isBetween(0, 2)); // two task slots
    }

    @Test
    void theDriverBroadcastsAnUnchangedModelOncePerSparkContext(@TempDir Path dir) throws Exception {
        Path copy = dir.resolve("mlp.onnx");
        java.nio.file.Files.copy(MlpData.model(), copy);
        ShippedModel first = ShippedModel.ship(spark.sparkContext(), copy.toString());
        assertThat(ShippedModel.ship(spark.sparkContext(), copy.toString())).isSameAs(first);
        // a changed file (here the same bytes, touched) is read and broadcast anew; the same bytes keep the same id
        java.nio.file.Files.setLastModifiedTime(copy, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() + 60_000));
        ShippedModel again = ShippedModel.ship(spark.sparkContext(), copy.toString());
        assertThat(again).isNotSameAs(first);
        assertThat(again.id()).isEqualTo(first.id());
    }

    @Test
    void outputColumnsCanBeRenamedAndTheLastShortBatchRunsAtItsSize() {
        List<Row> rows = new KilnModel().setModelPath(MlpData.model().toString()).setInputCols("x", "offset").setOutputCols("y", "cls")
                .setBatchSize(1000).transform(MlpData.frame(spark, 7, 1)).collectAsList();
        MlpData.Reference ref = MlpData.reference(7);
        for (Row r : rows) {
            int id = (int) r.getLong(0);
            assertThat(r.<Long>getList(r.fieldIndex("cls"))).containsExactly(ref.labels()[id]);
            assertThat(r.<Float>getList(r.fieldIndex("y")).getFirst()).isCloseTo(ref.logits()[id][0], within(1e-5f));
        }
    }

    @Test
    void savesAndLoadsWithSparkMlPersistence(@TempDir Path dir) throws Exception {
        KilnModel m = mlp(16).setOutputCols("a", "b").setHandleInvalid("keep").setDevice("CPU");
        String path = dir.resolve("kiln").toString();
        m.write().overwrite().save(path);
        KilnModel back = KilnModel.load(path);
        assertThat(back.uid()).isEqualTo(m.uid());
        assertThat(back.getModelPath()).isEqualTo(m.getModelPath());
        assertThat(back.getInputCols()).containsExactly("x", "offset");
        assertThat(back.getOutputCols()).containsExactly("a", "b");
        assertThat(back.getBatchSize()).isEqualTo(16);
        assertThat(back.getHandleInvalid()).isEqualTo("keep");
        assertThat(back.transform(MlpData.frame(spark, 20, 2)).select("a").count()).isEqualTo(20);
    }

    @Test
    void schemaMismatchesFailAtPlanTimeNamingColumnAndModelInput() {
        Dataset<Row> df = MlpData.frame(spark, 4, 1);
        assertThatThrownBy(() -> mlp(8).setInputCols("nope", "offset").transform(df))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("column 'nope'").hasMessageContaining("model input 'x' f32[batch, 8]").hasMessageContaining("not in the DataFrame");
        Dataset<Row> strings = df.withColumn("s", org.apache.spark.sql.functions.array(lit("a"), lit("b")));
        assertThatThrownBy(() -> mlp(8).setInputCols("s", "offset").transform(strings))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("column 's'").hasMessageContaining("model input 'x'").hasMessageContaining("array<string>");
        assertThatThrownBy(() -> mlp(8).setInputCols("x").transform(df))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("has 2 inputs");
        assertThatThrownBy(() -> mlp(8).setOutputCols("id", "label").transform(df))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("output column 'id'").hasMessageContaining("already a column");
        // a Vector column whose metadata declares its size (VectorSizeHint, VectorAssembler) is checked at plan time too
        Dataset<Row> sized = df.withColumn("offset", col("offset"), new AttributeGroup("offset", 5).toMetadata());
        assertThatThrownBy(() -> mlp(8).transform(sized))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("column 'offset'").hasMessageContaining("model input 'offset' f32[batch, 3]").hasMessageContaining("size 5");
        assertThatThrownBy(() -> mlp(8).setDevice("CPU 2").transform(df))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("device 'CPU 2' is not of the form KIND");
        assertThatThrownBy(() -> mlp(8).transformSchema(strings.schema().add("logits", new ArrayType(DataTypes.FloatType, false))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("output column 'logits'");
    }

    @Test
    void aModelExportedForOneRowRunsARowPerRunWithTheSameResults() {
        int before = ExecutorModels.compiles();
        List<Row> rows = new KilnModel().setModelPath(MlpData.model("mlp_fixed").toString()).setInputCols("x", "offset").setBatchSize(64)
                .transform(MlpData.frame(spark, 40, 2)).collectAsList();
        assertMatchesKiln(rows, 40);
        assertThat(ExecutorModels.compiles() - before).isEqualTo(1);
    }

    @Test
    void aRowOfOpenSizeIsRefusedAtPlanTime() {
        assertThatThrownBy(() -> new KilnModel().setModelPath(MlpData.model("open_axis").toString()).setInputCols("x", "offset")
                .transform(MlpData.frame(spark, 4, 1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("input 'x'").hasMessageContaining("axis 1 of open size (n)");
    }

    private static Dataset<Row> withBadRows() {
        List<Row> rows = new ArrayList<>(MlpData.rows(10));
        rows.set(3, RowFactory.create(3L, null, Vectors.dense(0, 0, 0)));
        rows.set(7, RowFactory.create(7L, List.of(1f, 2f), Vectors.dense(0, 0, 0)));
        return spark.createDataFrame(rows, MlpData.SCHEMA).coalesce(1);
    }

    @Test
    void aBadRowFailsItsTaskNamingItsPosition() {
        assertThatThrownBy(() -> mlp(4).transform(withBadRows()).collectAsList())
                .hasStackTraceContaining("row 3 of partition 0").hasStackTraceContaining("column 'x' is null")
                .hasStackTraceContaining("model input 'x' f32[batch, 8]");
        Dataset<Row> shortRow = withBadRows().where(col("id").notEqual(3));
        assertThatThrownBy(() -> mlp(4).transform(shortRow).collectAsList())
                .hasStackTraceContaining("row 6 of partition 0").hasStackTraceContaining("column 'x' has 2 values");
    }

    @Test
    void handleInvalidKeepPassesBadRowsThroughWithNullOutputs() {
        List<Row> rows = mlp(4).setHandleInvalid("keep").transform(withBadRows()).orderBy("id").collectAsList();
        assertThat(rows).hasSize(10);
        MlpData.Reference ref = MlpData.reference(10);
        for (Row r : rows) {
            int id = (int) r.getLong(0);
            if (id == 3 || id == 7) {
                assertThat(r.isNullAt(r.fieldIndex("logits"))).isTrue();
                assertThat(r.isNullAt(r.fieldIndex("label"))).isTrue();
            } else {
                assertThat(r.<Long>getList(r.fieldIndex("label"))).as("row %d", id).containsExactly(ref.labels()[id]);
                assertThat(r.<Float>getList(r.fieldIndex("logits")).get(2)).isCloseTo(ref.logits()[id][2], within(1e-5f));
            }
        }
    }
}
