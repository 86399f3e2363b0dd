package dev.kiln.spark;

import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.apache.spark.sql.functions.array;
import static org.apache.spark.sql.functions.call_function;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** {@code kiln_predict} as a SQL function in {@code local[2]}: SQL and DataFrame calls, analysis-time checks, bad rows. */
class SparkKilnFunctionsTest {
    private static SparkSession spark;
    private static UserDefinedFunction predict;

    @BeforeAll
    static void start() {
        spark = SparkTestSessions.local("SparkKilnFunctionsTest");
        predict = KilnFunctions.register(spark, "kiln_predict", MlpData.model().toString());
        assertThat(RegisteredFunctions.checkedIn(spark)).as("KilnSparkExtensions loaded through ServiceLoader").isTrue();
        KilnFunctions.register(spark, "kiln_predict_keep", MlpData.model().toString(), "CPU", "keep");
        MlpData.frame(spark, 120, 3).createOrReplaceTempView("t");
    }

    @AfterAll
    static void stop() { spark.stop(); }

    @Test
    void sqlCallsReturnAStructOfTheModelsOutputsAsKilnComputesThem() {
        Dataset<Row> out = spark.sql("SELECT id, kiln_predict(x, offset) AS p FROM t");
        StructType p = (StructType) out.schema().apply("p").dataType();
        assertThat(p.fieldNames()).containsExactly("logits", "label");
        assertThat(p.apply("label").dataType()).isEqualTo(DataTypes.createArrayType(DataTypes.LongType, false));
        MlpData.Reference ref = MlpData.reference(120);
        List<Row> rows = out.collectAsList();
        assertThat(rows).hasSize(120);
        for (Row r : rows) {
            int id = (int) r.getLong(0);
            Row s = r.getStruct(1);
            List<Float> logits = s.getList(0);
            for (int k = 0; k < 3; k++) assertThat(logits.get(k)).as("row %d logit %d", id, k).isCloseTo(ref.logits()[id][k], within(1e-5f));
            assertThat(s.<Long>getList(1)).containsExactly(ref.labels()[id]);
        }
    }

    @Test
    void dataFrameCallsThroughTheReturnedFunctionAndByName() {
        Dataset<Row> df = spark.table("t");
        List<Row> direct = df.select(col("id"), predict.apply(col("x"), col("offset")).getField("label").as("label")).orderBy("id").collectAsList();
        List<Row> byName = df.select(col("id"), call_function("kiln_predict", col("x"), col("offset")).getField("label").as("label")).orderBy("id")
                .collectAsList();
        assertThat(direct).isEqualTo(byName);
        MlpData.Reference ref = MlpData.reference(120);
        for (Row r : direct) assertThat(r.<Long>getList(1)).containsExactly(ref.labels()[(int) r.getLong(0)]);
    }

    @Test
    void argumentMismatchesFailWhenTheQueryIsAnalysedBeforeAnyTask() {
        Dataset<Row> df = spark.table("t").withColumn("s", array(lit("a"), lit("b")));
        // no action: select/sql analyse the query eagerly, so these throw before a job exists
        assertThatThrownBy(() -> df.select(predict.apply(col("s"), col("offset"))))
                .hasStackTraceContaining("kiln_predict, argument 1").hasStackTraceContaining("column 's'")
                .hasStackTraceContaining("model input 'x' f32[batch, 8]").hasStackTraceContaining("array<string>");
        assertThatThrownBy(() -> spark.sql("SELECT kiln_predict(x) FROM t"))
                .hasStackTraceContaining("WRONG_NUM_ARGS");
        assertThatThrownBy(() -> spark.sql("SELECT kiln_predict(x, id) FROM t"))
                .hasStackTraceContaining("kiln_predict, argument 2").hasStackTraceContaining("column 'id'")
                .hasStackTraceContaining("model input 'offset' f32[batch, 3]").hasStackTraceContaining("is bigint");
    }

    private static Dataset<Row> withBadRow() {
        List<Row> rows = new ArrayList<>(MlpData.rows(6));
        rows.set(4, RowFactory.create(4L, List.of(1f), Vectors.dense(0, 0, 0)));
        return spark.createDataFrame(rows, MlpData.SCHEMA).coalesce(1);
    }

    @Test
    void aBadRowFailsItsTaskOrIsNullUnderKeep() {
        assertThatThrownBy(() -> withBadRow().select(predict.apply(col("x"), col("offset"))).collectAsList())
                .hasStackTraceContaining("row 4 of partition 0").hasStackTraceContaining("argument 1 of kiln_predict' has 1 values");
        List<Row> kept = withBadRow().select(col("id"), call_function("kiln_predict_keep", col("x"), col("offset")).as("p")).orderBy("id")
                .collectAsList();
        assertThat(kept).hasSize(6);
        assertThat(kept.get(4).isNullAt(1)).isTrue();
        assertThat(kept.get(3).getStruct(1).<Long>getList(1)).containsExactly(MlpData.reference(6).labels()[3]);
    }
}
